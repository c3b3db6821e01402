import json
d = {"k%07d" % i: ("v%d" % (i * 7919 % 1000003)) * 3 for i in range(120000)}
s = json.dumps(d)
e = json.loads(s)
assert e == d
l = sorted(e.values())
print(len(d), len(s), l[0], l[-1], l[len(l) // 2])
