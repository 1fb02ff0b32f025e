import { checkGeometry } from "../../src/geo/validity.js";
import { circleRing, multiPolygon, polygon, squareRing } from "./fixtures.js";
import type { PolygonCoordinates } from "../../src/geo/types.js";
function grid(n: number, k: number, spacing = 0.01, r = 0.004): PolygonCoordinates[] {
  const side = Math.ceil(Math.sqrt(n)); const parts: PolygonCoordinates[] = [];
  for (let i = 0; i < n; i++) parts.push([circleRing((i % side) * spacing, Math.floor(i / side) * spacing, r, k - 1)]);
  return parts;
}
function time(name: string, g: any) { const ts=[]; let res; for (let r = 0; r < 5; r++) { const t = performance.now(); res = checkGeometry(g); ts.push((performance.now() - t).toFixed(1)); } console.log(name, ts.join(' '), JSON.stringify(res).slice(0, 100)); }
time("10000x10", multiPolygon(...grid(10000, 10)));
time("1000x100", multiPolygon(...grid(1000, 100)));
time("100x1000", multiPolygon(...grid(100, 1000)));
time("10x10000", multiPolygon(...grid(10, 10000)));
time("2x50000", multiPolygon(...grid(2, 50000)));
time("poly100k", polygon(circleRing(0, 0, 1, 99999)));
const u = 1/1024;
const cb: PolygonCoordinates[] = []; for (let i = 0; i < 200; i++) for (let j = 0; j < 100; j++) if ((i + j) % 2 === 0) cb.push([squareRing(i * u, j * u, u)]);
time("checker 10000 sq", multiPolygon(...cb));
const big: PolygonCoordinates = [circleRing(0, 0, 10, 49000), circleRing(0, 0, 9, 20000)];
const isl: PolygonCoordinates[] = []; for (let i = 0; i < 300; i++) isl.push([circleRing(-5 + (i % 20) * 0.5, -5 + Math.floor(i / 20) * 0.5, 0.1, 99)]);
time("islands", multiPolygon(big, ...isl));
const holes: PolygonCoordinates = [circleRing(0,0,10,9999)]; for (let i=0;i<900;i++) holes.push(circleRing(-4.5 + (i%30)*0.3, -4.5+Math.floor(i/30)*0.3, 0.1, 99));
time("poly 900 holes", polygon(...holes));
const sqs: PolygonCoordinates[] = []; for (let i = 0; i < 20000; i++) sqs.push([squareRing((i % 150) * 0.001, Math.floor(i / 150) * 0.001, 0.0008)]);
time("squares 20000x5", multiPolygon(...sqs));
