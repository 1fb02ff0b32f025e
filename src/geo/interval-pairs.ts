/**
 * How many pairs of closed intervals [starts[i], ends[i]] overlap or touch: what a sweep along
 * that axis compares. O(n log n): each interval, in order of its start, overlaps those that
 * started before it and have not ended before it starts. The arrays are not changed.
 */
export function overlappingIntervalPairs(starts: ArrayLike<number>, ends: ArrayLike<number>): number {
  const sortedStarts = Float64Array.from(starts).sort();
  const sortedEnds = Float64Array.from(ends).sort();
  let pairs = 0;
  let ended = 0;
  for (let started = 0; started < sortedStarts.length; started++) {
    while (sortedEnds[ended] < sortedStarts[started]) ended++;
    pairs += started - ended;
  }
  return pairs;
}
