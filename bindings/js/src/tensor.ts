// Tensor with onnxruntime-web's shape: new Tensor(type, data, dims), .type, .data, .dims, .size.

import { InvalidArgumentError, OnyxError } from './errors.js';

/** Element types onyx-web feeds and returns, with onnxruntime-web's names. */
export interface DataTypeMap {
  float32: Float32Array;
  uint8: Uint8Array;
  int8: Int8Array;
  uint16: Uint16Array;
  int16: Int16Array;
  int32: Int32Array;
  int64: BigInt64Array;
  string: string[];
  bool: Uint8Array;
  float16: Uint16Array;
  float64: Float64Array;
  uint32: Uint32Array;
  uint64: BigUint64Array;
}
export type TensorType = keyof DataTypeMap;
export type TensorData = DataTypeMap[TensorType];

/** ONNX TensorProto.DataType codes of the types above. */
export const typeCodes: Record<TensorType, number> = {
  float32: 1, uint8: 2, int8: 3, uint16: 4, int16: 5, int32: 6, int64: 7, string: 8, bool: 9,
  float16: 10, float64: 11, uint32: 12, uint64: 13,
};

const arrayTypes: Record<Exclude<TensorType, 'string'>, any> = {
  float32: Float32Array, uint8: Uint8Array, int8: Int8Array, uint16: Uint16Array, int16: Int16Array,
  int32: Int32Array, int64: BigInt64Array, bool: Uint8Array, float16: Uint16Array, float64: Float64Array,
  uint32: Uint32Array, uint64: BigUint64Array,
};

/** The onnxruntime-web type name of an ONNX element type code, or undefined. */
export function typeOfCode(code: number): TensorType | undefined {
  for (const [k, v] of Object.entries(typeCodes)) if (v === code) return k as TensorType;
  return undefined;
}

/** A fresh typed array of `type` over `buffer` (byteOffset 0). */
export function viewOf(type: TensorType, buffer: ArrayBufferLike, length: number): TensorData {
  if (type === 'string') throw new InvalidArgumentError('InvalidArgument', 'string tensors have no buffer');
  return new arrayTypes[type](buffer, 0, length);
}

function inferType(data: unknown): TensorType {
  if (data instanceof Float32Array) return 'float32';
  if (data instanceof Float64Array) return 'float64';
  if (data instanceof Int32Array) return 'int32';
  if (data instanceof BigInt64Array) return 'int64';
  if (data instanceof BigUint64Array) return 'uint64';
  if (data instanceof Uint8Array || data instanceof Uint8ClampedArray) return 'uint8';
  if (data instanceof Int8Array) return 'int8';
  if (data instanceof Uint16Array) return 'uint16';
  if (data instanceof Int16Array) return 'int16';
  if (data instanceof Uint32Array) return 'uint32';
  if (Array.isArray(data) && data.every((x) => typeof x === 'string')) return 'string';
  if (Array.isArray(data) && data.every((x) => typeof x === 'boolean')) return 'bool';
  if (Array.isArray(data)) return 'float32';
  throw new InvalidArgumentError('InvalidArgument', `cannot infer a tensor type from ${Object.prototype.toString.call(data)}`);
}

/** A CPU tensor. */
export class Tensor {
  readonly type: TensorType;
  readonly data: TensorData;
  readonly dims: readonly number[];
  readonly size: number;
  readonly location = 'cpu' as const;

  constructor(type: TensorType, data: TensorData | readonly unknown[], dims?: readonly number[]);
  constructor(data: TensorData | readonly unknown[], dims?: readonly number[]);
  constructor(a: any, b?: any, c?: any) {
    let type: TensorType, data: any, dims: readonly number[] | undefined;
    if (typeof a === 'string') {
      type = a as TensorType;
      data = b;
      dims = c;
    } else {
      type = inferType(a);
      data = a;
      dims = b;
    }
    if (!(type in typeCodes))
      throw new InvalidArgumentError('InvalidArgument', `unsupported tensor type '${type}' (onyx-web takes ${Object.keys(typeCodes).join(', ')})`);
    if (type === 'string') {
      if (!Array.isArray(data) || !data.every((x) => typeof x === 'string'))
        throw new InvalidArgumentError('InvalidArgument', "a 'string' tensor takes an array of strings");
    } else {
      const Want = arrayTypes[type];
      if (Array.isArray(data)) {
        data = type === 'int64' || type === 'uint64' ? Want.from(data, (x: any) => BigInt(x)) :
               type === 'bool' ? Uint8Array.from(data, (x: any) => (x ? 1 : 0)) : Want.from(data);
      } else if (type === 'uint8' && data instanceof Uint8ClampedArray) {
        data = new Uint8Array(data.buffer, data.byteOffset, data.length);
      } else if (!(data instanceof Want)) {
        throw new InvalidArgumentError('InvalidArgument',
          `a '${type}' tensor takes a ${Want.name}, not a ${Object.prototype.toString.call(data).slice(8, -1)}`);
      }
    }
    const n = (data as { length: number }).length;
    dims = dims ?? [n];
    for (const d of dims)
      if (!Number.isSafeInteger(d) || d < 0)
        throw new InvalidArgumentError('InvalidArgument', `dims [${dims.join(', ')}]: each must be a non-negative integer`);
    const size = dims.reduce((p, d) => p * d, 1);
    if (size !== n)
      throw new InvalidArgumentError('InvalidArgument', `dims [${dims.join(', ')}] hold ${size} elements but the data has ${n}`);
    this.type = type;
    this.data = data;
    this.dims = Object.freeze([...dims]);
    this.size = size;
  }

  /** The data (already on the CPU). */
  async getData(): Promise<TensorData> {
    return this.data;
  }
  dispose(): void {}
}

/** A typed array of `type` over the first `n` elements of `buf`. */
export function viewOfType(type: TensorType, buf: ArrayBuffer, n: number): ArrayBufferView {
  switch (type) {
    case 'float32': return new Float32Array(buf, 0, n);
    case 'float64': return new Float64Array(buf, 0, n);
    case 'int8': return new Int8Array(buf, 0, n);
    case 'uint8': case 'bool': return new Uint8Array(buf, 0, n);
    case 'int16': return new Int16Array(buf, 0, n);
    case 'uint16': case 'float16': return new Uint16Array(buf, 0, n);
    case 'int32': return new Int32Array(buf, 0, n);
    case 'uint32': return new Uint32Array(buf, 0, n);
    case 'int64': return new BigInt64Array(buf, 0, n);
    case 'uint64': return new BigUint64Array(buf, 0, n);
    default: throw new OnyxError('Internal', `no typed array for ${type}`);
  }
}
