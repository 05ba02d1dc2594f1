// Errors of onyx-web: each carries onyx's own message and its ErrorCode, as a subclass of
// OnyxError, so callers can `instanceof` or switch on `code` without parsing text.

/** onyx::ErrorCode values (include/onyx/error.h) and the codes onyx-web adds. */
export const ErrorCodes = {
  InvalidModel: 0,
  Unsupported: 1,
  InvalidArgument: 2,
  Io: 3,
  Runtime: 4,
  Limit: 5,
  Cancelled: 6,
  OutOfMemory: 100,
  Internal: 101,
  Fetch: 200,
  HashMismatch: 201,
  Released: 202,
} as const;
export type ErrorCodeName = keyof typeof ErrorCodes;

/** Base class of every error onyx-web throws. */
export class OnyxError extends Error {
  /** The code's name ("InvalidModel", "Unsupported", ...). */
  readonly code: ErrorCodeName;
  /** The numeric code (onyx::ErrorCode for codes below 100). */
  readonly codeNumber: number;
  constructor(code: ErrorCodeName, message: string) {
    super(message);
    this.code = code;
    this.codeNumber = ErrorCodes[code];
    this.name = new.target.name;
  }
}
/** The file is not a valid ONNX model (malformed protobuf, bad graph). */
export class InvalidModelError extends OnyxError {}
/** A valid model onyx-web cannot run (op, opset, dtype); in strict mode, lists the nodes. */
export class UnsupportedError extends OnyxError {}
/** Bad feeds: unknown or missing input name, wrong dtype, rank or shape. */
export class InvalidArgumentError extends OnyxError {}
/** A failure while executing a node. */
export class OnyxRuntimeError extends OnyxError {}
/** A resource limit of the session was reached. */
export class LimitError extends OnyxError {}
/** The WebAssembly heap could not grow enough. */
export class OutOfMemoryError extends OnyxError {}
/** The model could not be downloaded. */
export class ModelFetchError extends OnyxError {}
/** The downloaded model's SHA-256 is not the expected one (it is not run). */
export class HashMismatchError extends OnyxError {}

const classes: Partial<Record<ErrorCodeName, new (code: ErrorCodeName, message: string) => OnyxError>> = {
  InvalidModel: InvalidModelError,
  Unsupported: UnsupportedError,
  InvalidArgument: InvalidArgumentError,
  Io: InvalidModelError,
  Runtime: OnyxRuntimeError,
  Limit: LimitError,
  OutOfMemory: OutOfMemoryError,
  Fetch: ModelFetchError,
  HashMismatch: HashMismatchError,
};

/** The error of `code` (a name or onyx::ErrorCode number) with `message`. */
export function makeError(code: ErrorCodeName | number, message: string): OnyxError {
  let name: ErrorCodeName = 'Internal';
  if (typeof code === 'number') {
    for (const [k, v] of Object.entries(ErrorCodes)) if (v === code) name = k as ErrorCodeName;
  } else {
    name = code;
  }
  const C = classes[name] ?? OnyxError;
  return new C(name, message);
}

/** What crosses the worker boundary for an error. */
export interface WireError {
  code: ErrorCodeName;
  message: string;
}

export function toWire(e: unknown): WireError {
  if (e instanceof OnyxError) return { code: e.code, message: e.message };
  return { code: 'Internal', message: `internal error: ${e instanceof Error ? e.message : String(e)}` };
}
