const m = new Map();
for (let i = 0; i < 250000; i++) m.set("k" + i, { v: (i * 7919) % 1000003, s: "x" + i });
let s = 0;
for (const [k, o] of m) s += o.v;
const a = Array.from(m.values(), o => o.v).sort((x, y) => x - y);
console.log(m.size, s, a[0], a[a.length - 1], a[a.length >> 1]);
