// The landing-pad side of WebAssembly exception handling for onyx-web's pthreads build,
// linked instead of Emscripten's libunwind (system/lib/libunwind/src/Unwind-wasm.c).
//
// Why: with -fwasm-exceptions, each C++ catch clause that names a type stores its
// landing-pad index and LSDA into a global named __wasm_lpad_context, calls
// _Unwind_CallPersonality, and reads back the selector the personality function chose.
// Debian's em++ 3.1.6 compiles with clang 14, which addresses that global as a plain
// data symbol, while the libunwind it links (built from Emscripten 3.1.6's sources, where
// the variable is thread_local) defines it as thread-local: with -pthread, the compiled
// code writes to one address and the personality reads another, sees no LSDA and picks
// no clause. Every typed catch missed; only catch (...) caught (a 10-line program shows
// it: `catch (const E&)` misses the E it throws; with this file linked it is taken). The
// single-threaded build is not affected: without shared memory thread_local variables are
// ordinary globals.
//
// Here the context is an ordinary global, as clang 14 expects. The functions below are
// those the generated code and libc++abi's personality (__gxx_personality_wasm0) call;
// defining all of them keeps the linker from pulling libunwind's object. The context is
// shared by all threads, so two threads inside typed catch clauses at the same instant
// could read each other's values: onyx-web's typed catches run on the thread that called
// into the module (the session's planner and executor, the API's entry points); its pool
// threads only run kernel loops, whose errors the pool catches with catch (...), which
// does not consult the personality.
#include <unwind.h>

#include <cstdint>

namespace {
struct LandingPadContext {
  uintptr_t lpad_index;  // written by the landing pad: which pad of its function
  uintptr_t lsda;        // written by the landing pad: its function's exception table
  uintptr_t selector;    // written by the personality: the clause to take, 0 for none
};
}  // namespace

extern "C" {
LandingPadContext __wasm_lpad_context;  // the name clang 14's landing pads use

_Unwind_Reason_Code __gxx_personality_wasm0(int version, _Unwind_Action actions, uint64_t exception_class,
                                            _Unwind_Exception* exception, _Unwind_Context* context);

/// Called by every typed catch landing pad: asks the personality which clause matches.
/// WebAssembly unwinds in one phase, so the personality is run in the cleanup phase.
_Unwind_Reason_Code _Unwind_CallPersonality(void* exception_ptr) {
  auto* e = static_cast<_Unwind_Exception*>(exception_ptr);
  __wasm_lpad_context.selector = 0;
  return __gxx_personality_wasm0(1, _UA_CLEANUP_PHASE, e->exception_class, e,
                                 reinterpret_cast<_Unwind_Context*>(&__wasm_lpad_context));
}

/// Called by __cxa_throw: the engine unwinds, with the C++ exception tag (index 0).
_Unwind_Reason_Code _Unwind_RaiseException(_Unwind_Exception* e) { __builtin_wasm_throw(0, e); }

/// Called when a caught exception is done with (__cxa_end_catch and friends).
void _Unwind_DeleteException(_Unwind_Exception* e) {
  if (e->exception_cleanup) e->exception_cleanup(_URC_FOREIGN_EXCEPTION_CAUGHT, e);
}

/// The personality reports its choice through register 1, the selector.
void _Unwind_SetGR(_Unwind_Context* context, int index, _Unwind_Word value) {
  if (index == 1) reinterpret_cast<LandingPadContext*>(context)->selector = value;
}

/// The personality looks the landing pad up as call-site index (this - 2) of the LSDA.
_Unwind_Word _Unwind_GetIP(_Unwind_Context* context) {
  return reinterpret_cast<LandingPadContext*>(context)->lpad_index + 2;
}

/// There is no instruction pointer to move: the landing pad is already running.
void _Unwind_SetIP(_Unwind_Context*, _Unwind_Word) {}

void* _Unwind_GetLanguageSpecificData(_Unwind_Context* context) {
  return reinterpret_cast<void*>(reinterpret_cast<LandingPadContext*>(context)->lsda);
}

_Unwind_Ptr _Unwind_GetRegionStart(_Unwind_Context*) { return 0; }
}
