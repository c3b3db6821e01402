my %h;
for my $i (0 .. 119999) { $h{"key$i"} = ($i * 7919) % 1000003; }
my ($n, $s) = (0, 0);
for my $k (sort keys %h) { $n++; $s += $h{$k}; }
my @v = sort { $a <=> $b } values %h;
print "$n $s $v[0] $v[-1] $v[$#v/2]\n";
