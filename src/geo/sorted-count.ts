/** How many of the ascending `sorted` values are below `value` (or at or below it, when `orEqual`). O(log n). */
export function countBelow(sorted: ArrayLike<number>, value: number, orEqual = false): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (sorted[middle] < value || (orEqual && sorted[middle] === value)) low = middle + 1;
    else high = middle;
  }
  return low;
}
