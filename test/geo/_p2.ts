import { checkGeometry } from "../../src/geo/validity.js";
import { circleRing, multiPolygon, polygon } from "./fixtures.js";
import type { PolygonCoordinates } from "../../src/geo/types.js";
function time(name: string, g: any) { const ts=[]; let res; for (let r = 0; r < 5; r++) { const t = performance.now(); res = checkGeometry(g); ts.push((performance.now() - t).toFixed(1)); } console.log(name, ts.join(' '), JSON.stringify(res).slice(0, 100)); }
const big: PolygonCoordinates = [circleRing(0, 0, 10, 49000), circleRing(0, 0, 9, 20000)];
time("big alone", polygon(...big));
const isl: PolygonCoordinates[] = []; for (let i = 0; i < 300; i++) isl.push([circleRing(-5 + (i % 20) * 0.5, -5 + Math.floor(i / 20) * 0.5, 0.1, 99)]);
time("islands", multiPolygon(big, ...isl));
