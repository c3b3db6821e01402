array set h {}
for {set i 0} {$i < 200000} {incr i} { set h(key$i) [expr {($i * 7919) % 1000003}] }
set s 0
foreach k [lsort [array names h]] { incr s $h($k) }
set v {}
foreach k [array names h] { lappend v $h($k) }
set l [lsort -integer $v]
puts "[array size h] $s [lindex $l 0] [lindex $l end] [string length [join $l ,]]"
