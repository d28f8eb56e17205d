// Metron counts missed deadlines with Python's float `//`, which floors the EXACT quotient of the
// two doubles (1 // 0.1 == 9.0), whereas Math.floor(a / b) floors the rounded quotient (10).
// This is CPython's float_floor_div, relying on JS `%` being the exact C fmod on doubles.

/** Python's `a // b` for doubles: floor of the exact quotient a/b. */
export function floorDivide(a: number, b: number): number {
  if (b === 0) throw new RangeError('floorDivide: division by zero');
  if (!Number.isFinite(a) || !Number.isFinite(b)) return Math.floor(a / b);
  let mod = a % b;
  let div = (a - mod) / b;
  if (mod !== 0 && (b < 0) !== (mod < 0)) {
    mod += b;
    div -= 1;
  }
  if (div === 0) return 0;
  let floorDiv = Math.floor(div);
  if (div - floorDiv > 0.5) floorDiv += 1;
  return floorDiv;
}
