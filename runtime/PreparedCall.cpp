//===- PreparedCall.cpp - fakv._runtime.PreparedCall -----------------------===//

#include "runtime/PreparedCall.h"

#include "runtime/LaunchKernel.h"
#include "runtime/PythonGuard.h"
#include "runtime/fakv_runtime.h"

#include <cstring>
#include <vector>

namespace fakv::runtime {

namespace {

PyObject *dataPtrName, *contiguousName;

// The decode kernel's per-call pointer parameters, in the order of the
// constructor's `decode_slots`.
enum Slot {
  Q, K, V, Table, Seqlens, Out, Lse, OutPart, LsePart, BatchIdx, Slopes, KNew, VNew, Cos, Sin, LeftPad,
  NumSlots
};
// The combine kernel's by default (`combine_slots` not given): its first
// four parameters, OutPart, LsePart, Out, Lse.
constexpr int DefaultCombineSlots[NumSlots] = {-1, -1, -1, -1, -1, 2, 3, 0, 1, -1, -1, -1, -1, -1, -1, -1};
// The addresses a call passes, in this order.
enum Address {
  AQ, AK, AV, ASeqlens, ATable, ABatchIdx, ASlopes, AKNew, AVNew, ACos, ASin, ALeftPad, NumAddresses
};
static_assert(NumAddresses == PreparedCallAddresses, "PreparedCall.h lists the addresses");

struct Launch {
  KernelObject *kernel = nullptr;
  long long grid[3] = {1, 1, 1};
  std::vector<unsigned char> slots; // 8 bytes per runtime parameter, packed once
};

struct PreparedCallObject {
  PyObject_HEAD
  Launch *decode, *combine;           // combine null with one split
  int decodeSlots[NumSlots];
  int combineSlots[NumSlots];         // -1: not a parameter of combine
  uint64_t layout[8];                 // the caches' dims and strides
  unsigned long long wsBytes, partOutBytes, partLseBytes;
  int returnLse, copyQ, earlyDecode;  // earlyDecode: decode launched programmatically too
  PyObject *emptyLike, *emptyLse, *rawAlloc, *rawDelete, *stream, *seqlensTensorOf, *emptyWorkspace;
  PyObject *kernels;                  // the two Kernel objects, kept alive
  void *context;                      // the CUDA context it was prepared in (its tensors' device)
};

bool pack(Launch &l, PyObject *kernel, PyObject *grid, PyObject *args) {
  if (!PyObject_TypeCheck(kernel, &KernelType)) {
    PyErr_SetString(PyExc_TypeError, "PreparedCall: a kernel must be a fakv._runtime.Kernel");
    return false;
  }
  l.kernel = reinterpret_cast<KernelObject *>(kernel);
  if (!l.kernel->kinds) {
    PyErr_SetString(PyExc_TypeError, "PreparedCall: a Kernel not initialised");
    return false;
  }
  if (!PyArg_ParseTuple(grid, "LLL", &l.grid[0], &l.grid[1], &l.grid[2]))
    return false;
  PyObject *fast = ownedItems(args, "PreparedCall: arguments must be a sequence");
  if (!fast)
    return false;
  size_t n = l.kernel->kinds->size();
  if (static_cast<size_t>(PySequence_Fast_GET_SIZE(fast)) != n) {
    Py_DECREF(fast);
    PyErr_Format(PyExc_TypeError, "%s takes %zu arguments", l.kernel->name->c_str(), n);
    return false;
  }
  l.slots.assign(8 * n, 0);
  for (size_t i = 0; i < n; ++i) {
    uint64_t address;
    if (!packArgument(l.kernel, i, PySequence_Fast_GET_ITEM(fast, i), l.slots.data() + 8 * i, &address)) {
      Py_DECREF(fast);
      return false;
    }
  }
  Py_DECREF(fast);
  return true;
}

/// Whether every slot is a pointer parameter of the launch's kernel (-1,
/// none, allowed when `optional`).
bool checkSlots(const int *slots, const char *what, const Launch &l, bool optional) {
  for (int i = 0; i < NumSlots; ++i) {
    int s = slots[i];
    if (optional && s == -1)
      continue;
    if (s < 0 || static_cast<size_t>(s) >= l.kernel->kinds->size() || (*l.kernel->kinds)[s] != 'p') {
      PyErr_Format(PyExc_ValueError, "PreparedCall: %s slot %d is not a pointer parameter", what, s);
      return false;
    }
  }
  return true;
}

// A kernel's slots (NumSlots parameter indices, in Slot order; -1 for none
// when `optional`), each a pointer parameter of the kernel.
bool readSlots(PyObject *given, const char *what, const Launch &l, bool optional, int *out) {
  PyObject *slots = ownedItems(given, "PreparedCall: slots must be a sequence");
  if (!slots)
    return false;
  if (PySequence_Fast_GET_SIZE(slots) != NumSlots) {
    Py_DECREF(slots);
    PyErr_Format(PyExc_TypeError, "PreparedCall: %d %s slots", static_cast<int>(NumSlots), what);
    return false;
  }
  for (int i = 0; i < NumSlots; ++i) {
    long s = PyLong_AsLong(PySequence_Fast_GET_ITEM(slots, i));
    if (s == -1 && PyErr_Occurred()) {
      Py_DECREF(slots);
      return false;
    }
    out[i] = s < -1 || s > 255 ? -2 : static_cast<int>(s);   // (-2: out of any kernel's range)
  }
  Py_DECREF(slots);
  return checkSlots(out, what, l, optional);
}

/// PyArg's "O&" converter of a byte count or a stride into a T: an int from
/// 0 to 2^64 - 1 (PyArg's "K" wraps -1 and 2^64 + 7 without a word).
template <typename T> int toU64(PyObject *o, void *out) {
  static_assert(sizeof(T) == sizeof(unsigned long long));
  PyObject *i = PyNumber_Index(o);
  if (!i)
    return 0;
  unsigned long long v = PyLong_AsUnsignedLongLong(i);
  Py_DECREF(i);
  if (v == static_cast<unsigned long long>(-1) && PyErr_Occurred())
    return 0;
  *static_cast<T *>(out) = v;
  return 1;
}

int PreparedCall_init(PreparedCallObject *self, PyObject *args, PyObject *kwargs) {
  static const char *keywords[] = {
      "decode", "decode_grid", "decode_args", "decode_slots", "combine", "combine_grid",
      "combine_args", "cache_layout", "ws_bytes", "part_out_bytes", "part_lse_bytes", "return_lse",
      "copy_q", "empty_like", "empty_lse", "raw_alloc", "raw_delete", "stream", "seqlens_tensor",
      "empty_workspace", "early_decode", "combine_slots", nullptr};
  PyObject *decode, *dgrid, *dargs, *dslots, *combine, *cgrid, *cargs, *layout, *cslots = nullptr;
  PyObject *emptyLike, *emptyLse, *rawAlloc, *rawDelete, *stream, *seqlensTensorOf, *emptyWorkspace;
  if (self->decode) {                 // (its launches hold borrowed kernels: kept as they are)
    PyErr_SetString(PyExc_TypeError, "a PreparedCall is initialised once");
    return -1;
  }
  if (!PyArg_ParseTupleAndKeywords(
          args, kwargs, "OOOOOOOOO&O&O&ppOOOOOOO|pO", const_cast<char **>(keywords), &decode, &dgrid,
          &dargs, &dslots, &combine, &cgrid, &cargs, &layout, toU64<unsigned long long>,
          &self->wsBytes, toU64<unsigned long long>, &self->partOutBytes, toU64<unsigned long long>,
          &self->partLseBytes, &self->returnLse, &self->copyQ, &emptyLike, &emptyLse, &rawAlloc,
          &rawDelete, &stream, &seqlensTensorOf, &emptyWorkspace, &self->earlyDecode, &cslots))
    return -1;
  self->decode = new Launch();
  if (!pack(*self->decode, decode, dgrid, dargs))
    return -1;
  if (combine != Py_None) {
    self->combine = new Launch();
    if (!pack(*self->combine, combine, cgrid, cargs))
      return -1;
  }
  if (!readSlots(dslots, "decode", *self->decode, false, self->decodeSlots))
    return -1;
  if (cslots && cslots != Py_None) {
    if (!self->combine || !readSlots(cslots, "combine", *self->combine, true, self->combineSlots))
      return self->combine ? -1 : (PyErr_SetString(PyExc_ValueError,
                                                   "PreparedCall: combine_slots without combine"), -1);
  } else {
    std::memcpy(self->combineSlots, DefaultCombineSlots, sizeof(DefaultCombineSlots));
    if (self->combine && !checkSlots(self->combineSlots, "combine", *self->combine, true))
      return -1;
  }
  auto u64 = toU64<uint64_t>;
  if (!PyArg_ParseTuple(layout, "O&O&O&O&O&O&O&O&", u64, &self->layout[0], u64, &self->layout[1], u64,
                        &self->layout[2], u64, &self->layout[3], u64, &self->layout[4], u64,
                        &self->layout[5], u64, &self->layout[6], u64, &self->layout[7]))
    return -1;
  PyObject **keep[] = {&self->emptyLike, &self->emptyLse, &self->rawAlloc, &self->rawDelete,
                       &self->stream, &self->seqlensTensorOf, &self->emptyWorkspace};
  PyObject *given[] = {emptyLike, emptyLse, rawAlloc, rawDelete, stream, seqlensTensorOf, emptyWorkspace};
  for (int i = 0; i < 7; ++i) {
    Py_INCREF(given[i]);
    Py_XSETREF(*keep[i], given[i]);
  }
  if (fakv_current_context(&self->context)) {
    raiseRuntime();
    return -1;
  }
  if (!self->context) {      // (prepare.call binds one first: never keep a call of no context)
    PyErr_SetString(PyExc_RuntimeError, "PreparedCall: no current CUDA context in this thread");
    return -1;
  }
  // Last: run() refuses a call without its kernels (one whose init failed).
  Py_XSETREF(self->kernels, PyTuple_Pack(2, decode, combine));
  return self->kernels ? 0 : -1;
}

void PreparedCall_dealloc(PreparedCallObject *self) {
  delete self->decode;
  delete self->combine;
  Py_XDECREF(self->emptyLike);
  Py_XDECREF(self->emptyLse);
  Py_XDECREF(self->rawAlloc);
  Py_XDECREF(self->rawDelete);
  Py_XDECREF(self->stream);
  Py_XDECREF(self->seqlensTensorOf);
  Py_XDECREF(self->emptyWorkspace);
  Py_XDECREF(self->kernels);
  Py_TYPE(self)->tp_free(reinterpret_cast<PyObject *>(self));
}

/// An int result of a call into Python (owned reference consumed).
bool asAddress(PyObject *result, uint64_t &out) {
  if (!result)
    return false;
  out = PyLong_AsUnsignedLongLong(result);
  Py_DECREF(result);
  return !PyErr_Occurred();
}

/// Workspaces kept between calls, one per (context, stream), from torch's
/// caching allocator: the calls of one stream run in turn (a decode
/// launched early waits for the kernels before it: griddepcontrol.wait), so
/// one stream's calls can share one, as the allocator itself would hand a
/// freed block to the next allocation of that stream. Not while the stream
/// is captured into a CUDA graph (the graph keeps its own), nor above
/// kKeptBytes, nor past kKeptStreams streams: then allocated and freed per
/// call. Saves the two calls into the allocator (~1.5 us of host time).
/// The allocator's calls release the GIL: another thread may use the table
/// meanwhile, so an entry is emptied before its block is freed and only
/// filled when still empty after the allocation.
struct KeptWorkspace {
  void *context;
  uint64_t stream, address;
  unsigned long long bytes;
};
constexpr unsigned long long kKeptBytes = 64ull << 20;
constexpr size_t kKeptStreams = 16;
KeptWorkspace keptTable[kKeptStreams];
size_t keptCount = 0;
PyObject *keptDelete = nullptr; // the allocator's free, for the kept blocks

/// A workspace of `bytes` for a call on `stream` (`capturing`: into a CUDA
/// graph): the kept one (`*kept` true), or one allocated for this call alone
/// (the caller frees it after its launches). False with a Python exception.
/// No Python runs between its return and the launches (the address stays
/// this call's until then).
bool workspaceFor(PyObject *rawAlloc, PyObject *rawDelete, void *context, uint64_t stream, bool capturing,
                  unsigned long long bytes, uint64_t &out, bool *kept) {
  *kept = false;
  auto allocate = [&](unsigned long long size, uint64_t &address) {
    return asAddress(PyObject_CallFunction(rawAlloc, "KK", size, static_cast<unsigned long long>(stream)),
                     address);
  };
  if (bytes > kKeptBytes || capturing)
    return allocate(bytes, out);
  size_t i = 0;
  while (i < keptCount && !(keptTable[i].context == context && keptTable[i].stream == stream))
    ++i;
  if (i == keptCount) {
    if (keptCount == kKeptStreams)
      return allocate(bytes, out);
    keptTable[keptCount++] = {context, stream, 0, 0};
    if (!keptDelete) {
      Py_INCREF(rawDelete);
      keptDelete = rawDelete;
    }
  }
  KeptWorkspace &w = keptTable[i];
  if (w.bytes >= bytes) {
    out = w.address;
    *kept = true;
    return true;
  }
  if (uint64_t old = w.address) {   // (stream-ordered: reused by the allocator after this stream's work)
    unsigned long long oldBytes = w.bytes;
    w.address = 0;
    w.bytes = 0;
    PyObject *r = PyObject_CallFunction(keptDelete, "K", static_cast<unsigned long long>(old));
    if (!r) {
      if (w.address == 0) {         // (not freed: kept again, rather than lost)
        w.address = old;
        w.bytes = oldBytes;
      }
      return false;
    }
    Py_DECREF(r);
  }
  unsigned long long size = (bytes + (1u << 20) - 1) & ~static_cast<unsigned long long>((1u << 20) - 1);
  if (!allocate(size, out))
    return false;
  if (w.address == 0) {             // (else another thread kept one meanwhile: this one is the call's)
    w.address = out;
    w.bytes = size;
    *kept = true;
  }
  return true;
}

bool dataPtr(PyObject *tensor, uint64_t &out) {
  return asAddress(PyObject_CallMethodNoArgs(tensor, dataPtrName), out);
}

void setSlot(Launch &l, int slot, uint64_t value) {
  std::memcpy(l.slots.data() + 8 * slot, &value, 8);
}

// The slots' values of one call into a launch's packed parameters.
void setSlots(Launch &l, const int *slots, const uint64_t *values) {
  for (int i = 0; i < NumSlots; ++i)
    if (slots[i] >= 0)
      setSlot(l, slots[i], values[i]);
}

bool launch(Launch &l, void *context, uint64_t stream, const uint64_t *layout, bool early) {
  unsigned grid[3];
  if (!launchGrid(l.kernel, l.grid, grid))
    return false;
  alignas(64) unsigned char maps[8][128];
  for (size_t t = 0; t < l.kernel->tensormaps->size(); ++t) {
    uint64_t address;
    std::memcpy(&address, l.slots.data() + 8 * (*l.kernel->tensormaps)[t].arg, 8);
    const unsigned char *map = tensorMapAt(l.kernel, t, address, layout);
    if (!map)
      return false;
    std::memcpy(maps[t], map, 128);
  }
  return launchSlots(l.kernel, grid, stream, l.slots.data(), maps, early, context);
}

/// The call's work once its addresses are read (`a`: NumAddresses of them).
PyObject *run(PreparedCallObject *self, uint64_t *a, PyObject *q, PyObject *seqlens) {
  if (!self->decode || !self->kernels) {
    PyErr_SetString(PyExc_TypeError, "PreparedCall not initialised");
    return nullptr;
  }
  void *context = nullptr;
  if (fakv_current_context(&context))
    return raiseRuntime();
  // FlashAttention's CUDA guard: the call runs in the context it was
  // prepared in (its tensors' device: the key holds their devices), the
  // thread's own made current again after it. Torch's allocations below
  // (out, the LSE, the workspace from its raw allocator) follow the current
  // context's device. A thread whose first CUDA work is this call has none
  // (the runtime binds one lazily): it is left on none. Any Python run
  // below (torch's allocations: a device guard's exit, from this thread or
  // after another thread made a context for the device torch notes, may
  // make another context current) is undone at each launch: launchSlots
  // makes the call's context current when it is not.
  struct Restore {
    bool on = false;
    void *previous = nullptr;
    ~Restore() {
      if (on)
        fakv_set_current_context(previous);
    }
  } restore;
  if (context != self->context) {
    if (fakv_set_current_context(self->context))
      return raiseRuntime();
    restore.on = true;
    restore.previous = context;
    context = self->context;
  }
  uint64_t stream;
  if (!asAddress(PyObject_CallNoArgs(self->stream), stream))
    return nullptr;
  // Whether the stream is being captured into a CUDA graph, asked once where
  // it matters: an int cache_seqlens' tensor and the kept workspace.
  int capturing = 0;
  if ((!a[ASeqlens] || (self->rawAlloc != Py_None && self->wsBytes <= kKeptBytes)) &&
      fakv_stream_capturing(reinterpret_cast<void *>(stream), &capturing))
    return raiseRuntime();
  // An int (or absent) cache_seqlens: its (batch,) tensor, from Python,
  // told the stream and whether it is captured (a stream's tensor is filled
  // in its order; a graph gets one of its own: prepare.SeqlensTensors).
  // The tensor is held until the kernels are queued, as q's copy below: another thread's call may drop it
  // from SeqlensTensors meanwhile (the GIL is released in the allocations between), and its block, freed,
  // could be handed out and filled with another value before this call's decode.
  PyObject *seqlensTensor = nullptr;
  if (!a[ASeqlens]) {
    PyObject *handle = PyLong_FromUnsignedLongLong(stream);
    if (!handle)
      return nullptr;
    seqlensTensor = PyObject_CallFunctionObjArgs(self->seqlensTensorOf, seqlens, capturing ? Py_True : Py_False,
                                                 handle, nullptr);
    Py_DECREF(handle);
    if (!seqlensTensor || !dataPtr(seqlensTensor, a[ASeqlens])) {
      Py_XDECREF(seqlensTensor);
      return nullptr;
    }
  }
  // q made contiguous (out is written with q's strides): held until the
  // kernels that read it are queued (freed earlier, torch's allocator could
  // hand its block to the lse or the workspace this call allocates next).
  PyObject *qc = nullptr;
  if (self->copyQ) {
    qc = PyObject_CallMethodNoArgs(q, contiguousName);
    if (!qc || !dataPtr(qc, a[AQ])) {
      Py_XDECREF(qc);
      Py_XDECREF(seqlensTensor);
      return nullptr;
    }
    q = qc;
  }
  PyObject *out = PyObject_CallOneArg(self->emptyLike, q);
  uint64_t op, wp = 0, lp;
  if (!out || !dataPtr(out, op)) {
    Py_XDECREF(out);
    Py_XDECREF(qc);
    Py_XDECREF(seqlensTensor);
    return nullptr;
  }
  PyObject *lse = nullptr, *ws = nullptr, *result = nullptr;
  bool rawWorkspace = false;   // a workspace of this call alone, from the allocator: freed after it
  if (self->returnLse) {
    lse = PyObject_CallNoArgs(self->emptyLse);
    if (!lse || !dataPtr(lse, lp))
      goto done;
  }
  if (self->rawAlloc != Py_None) {   // (the last Python before the launches: see workspaceFor)
    bool kept;
    if (!workspaceFor(self->rawAlloc, self->rawDelete, context, stream, capturing, self->wsBytes, wp, &kept))
      goto done;
    rawWorkspace = !kept;
  } else {
    ws = PyObject_CallFunction(self->emptyWorkspace, "K", self->wsBytes);
    if (!ws || !dataPtr(ws, wp))
      goto done;
  }
  {
    uint64_t lsePart = wp + self->partOutBytes;
    if (!self->returnLse)
      lp = lsePart + self->partLseBytes;
    uint64_t v[NumSlots];
    v[Q] = a[AQ];
    v[K] = a[AK];
    v[V] = a[AV];
    v[Table] = a[ATable] ? a[ATable] : a[ASeqlens];     // any int32 tensor when unused
    v[Seqlens] = a[ASeqlens];
    v[Out] = op;
    v[Lse] = lp;
    v[OutPart] = wp;
    v[LsePart] = lsePart;
    v[BatchIdx] = a[ABatchIdx] ? a[ABatchIdx] : a[ASeqlens];
    v[Slopes] = a[ASlopes] ? a[ASlopes] : lp;           // any f32 tensor when unused
    v[KNew] = a[AKNew] ? a[AKNew] : a[AQ];              // (not read without new keys,
    v[VNew] = a[AVNew] ? a[AVNew] : a[AQ];              //  rotary or padding)
    v[Cos] = a[ACos] ? a[ACos] : a[AQ];
    v[Sin] = a[ASin] ? a[ASin] : a[AQ];
    v[LeftPad] = a[ALeftPad] ? a[ALeftPad] : a[ASeqlens];
    setSlots(*self->decode, self->decodeSlots, v);
    if (!launch(*self->decode, context, stream, self->layout, self->earlyDecode))
      goto done;
    if (self->combine) {
      setSlots(*self->combine, self->combineSlots, v);
      if (!launch(*self->combine, context, stream, self->layout, true))
        goto done;
    }
    result = self->returnLse ? PyTuple_Pack(2, out, lse) : (Py_INCREF(out), out);
  }
done:
  if (rawWorkspace) {
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyObject *r = PyObject_CallFunction(self->rawDelete, "K", static_cast<unsigned long long>(wp));
    Py_XDECREF(r);
    if (type)
      PyErr_Restore(type, value, traceback);
    else if (!r)
      Py_CLEAR(result);
  }
  Py_XDECREF(ws);
  Py_XDECREF(lse);
  Py_DECREF(out);
  Py_XDECREF(qc);             // (stream-ordered: its block is reused only after the kernels)
  Py_XDECREF(seqlensTensor);  // (the same)
  return result;
}

PyObject *PreparedCall_call(PreparedCallObject *self, PyObject *args, PyObject *kwargs) {
  PyObject *addressTuple, *q, *seqlens;
  if (kwargs || !PyArg_UnpackTuple(args, "PreparedCall", 3, 3, &addressTuple, &q, &seqlens))
    return kwargs ? (PyErr_SetString(PyExc_TypeError, "PreparedCall takes no keywords"), nullptr)
                  : nullptr;
  uint64_t a[NumAddresses];
  if (!PyTuple_Check(addressTuple) || PyTuple_GET_SIZE(addressTuple) != NumAddresses) {
    PyErr_Format(PyExc_TypeError, "PreparedCall: %d addresses", static_cast<int>(NumAddresses));
    return nullptr;
  }
  for (int i = 0; i < NumAddresses; ++i) {
    a[i] = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(addressTuple, i));
    if (PyErr_Occurred())
      return nullptr;
  }
  return run(self, a, q, seqlens);
}

} // namespace

PyObject *callPrepared(PyObject *call, const int64_t *addresses, PyObject *q, PyObject *seqlens) {
  uint64_t a[NumAddresses];
  for (int i = 0; i < NumAddresses; ++i)
    a[i] = static_cast<uint64_t>(addresses[i]);
  return run(reinterpret_cast<PreparedCallObject *>(call), a, q, seqlens);
}

PyTypeObject PreparedCallType = {PyVarObject_HEAD_INIT(nullptr, 0)};

PyObject *keptWorkspaces(PyObject *, PyObject *) {
  void *context = nullptr;
  if (fakv_current_context(&context))
    return raiseRuntime();
  PyObject *list = PyList_New(0);
  for (size_t i = 0; list && i < keptCount; ++i) {
    const KeptWorkspace &w = keptTable[i];
    if (w.context != context || !w.address)
      continue;
    PyObject *item = Py_BuildValue("(KK)", static_cast<unsigned long long>(w.stream), w.bytes);
    if (!item || PyList_Append(list, item)) {
      Py_XDECREF(item);
      Py_CLEAR(list);
      break;
    }
    Py_DECREF(item);
  }
  return list;
}

bool initPreparedCallType() {
  PreparedCallType.tp_name = "fakv._runtime.PreparedCall";
  PreparedCallType.tp_basicsize = sizeof(PreparedCallObject);
  PreparedCallType.tp_flags = Py_TPFLAGS_DEFAULT;
  PreparedCallType.tp_doc = "A checked, planned flash_attn_with_kvcache call (runtime/PreparedCall.h)";
  PreparedCallType.tp_new = PyType_GenericNew;
  PreparedCallType.tp_init = reinterpret_cast<initproc>(NoThrow<PreparedCall_init>::call);
  PreparedCallType.tp_dealloc = reinterpret_cast<destructor>(PreparedCall_dealloc);
  PreparedCallType.tp_call = reinterpret_cast<ternaryfunc>(NoThrow<PreparedCall_call>::call);
  dataPtrName = PyUnicode_InternFromString("data_ptr");
  contiguousName = PyUnicode_InternFromString("contiguous");
  return PyType_Ready(&PreparedCallType) == 0;
}

} // namespace fakv::runtime
