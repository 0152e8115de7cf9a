//===- FakvPython.cpp - the fakv compiler as a Python extension -----------===//
//
// `fakv._fakv`: compile fakv IR text (as the DSL emits it) to any stage of
// the GPU pipeline, or JIT it for the host (the CPU path) and call it.
// Diagnostics come back as the exception's message, with the locations the
// DSL wrote (the kernel's Python file and line).
//
//===----------------------------------------------------------------------===//

#include "lowering/LaunchFacts.h"
#include "lowering/Passes.h"
#include "passes/Passes.h"
#include "tools/init/FakvInit.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <pthread.h>
#include <thread>
#include <variant>

namespace py = pybind11;
using namespace mlir;

namespace {

/// Forks seen in this process's line (each child bumps it: pthread_atfork):
/// a lock a thread of the parent held is never released in the child, where
/// that thread is not.
std::atomic<unsigned> forks{0};

/// Work done without the GIL (a compile, a CPU-path call), counted. A daemon
/// thread inside such work when the interpreter exited aborted the process
/// ("terminate called without an active exception": Python 3.11-3.13 end a
/// thread that takes the GIL back during finalisation by unwinding it,
/// through pybind11's noexcept destructor). At exit (an atexit function, run
/// before finalisation begins) no new such work starts in another thread (a
/// thread that tries waits, without the GIL, for the process to end) and the
/// work running is waited for: it takes the GIL back while that is still
/// safe. The exiting thread itself goes on (an atexit function of the
/// program's that calls fakv: it is the thread that finalises).
class WithoutGil {
public:
  WithoutGil() {
    State &s = state();
    std::unique_lock<std::mutex> guard(s.lock);
    if (s.closing && std::this_thread::get_id() != s.closer) {
      guard.unlock();
      PyEval_SaveThread();
      for (;;)
        std::this_thread::sleep_for(std::chrono::hours(1));
    }
    ++s.running;
    guard.unlock();
    saved = PyEval_SaveThread();
  }
  ~WithoutGil() {
    PyEval_RestoreThread(saved);
    State &s = state();
    std::lock_guard<std::mutex> guard(s.lock);
    if (--s.running == 0)
      s.idle.notify_all();
  }
  WithoutGil(const WithoutGil &) = delete;
  WithoutGil &operator=(const WithoutGil &) = delete;

  /// atexit's: the GIL held.
  static void waitAtExit() {
    State &s = state();
    {
      std::lock_guard<std::mutex> guard(s.lock);
      s.closing = true;
      s.closer = std::this_thread::get_id();
    }
    py::gil_scoped_release release;
    std::unique_lock<std::mutex> guard(s.lock);
    s.idle.wait(guard, [&] { return s.running == 0; });
  }

  /// In a forked child: the parent's threads, which may have held the lock
  /// or been counted, are not there (the old state is leaked, not destroyed).
  static void afterForkInChild() { current = new State; }

private:
  struct State {
    std::mutex lock;
    std::condition_variable idle;
    unsigned running = 0;
    bool closing = false;
    std::thread::id closer;   // the thread that ran waitAtExit
  };
  static State &state() { return *current; }
  static State *current;
  PyThreadState *saved;
};
WithoutGil::State *WithoutGil::current = new WithoutGil::State;

/// One context per thread, so that threads compile in parallel (the GIL is
/// released while they do). Never freed: a CpuModule made in a thread keeps
/// using its context after the thread ends.
MLIRContext &context() {
  thread_local MLIRContext *ctx = [] {
    DialectRegistry registry;
    fakv::registerFakvDialects(registry);
    auto *c = new MLIRContext(registry, MLIRContext::Threading::DISABLED);
    c->loadAllAvailableDialects();
    return c;
  }();
  return *ctx;
}

/// `file:line:col` of a location, as compilers print it.
std::string where(Location loc) {
  if (auto flc = loc->findInstanceOf<FileLineColLoc>())
    return (flc.getFilename().getValue() + ":" + llvm::Twine(flc.getLine()) + ":" +
            llvm::Twine(flc.getColumn()))
        .str();
  std::string s;
  llvm::raw_string_ostream os(s);
  os << loc;
  return s;
}

/// Runs `build`'s passes on `ir` (parsed from text, or a module); throws
/// with the collected diagnostics on failure.
OwningOpRef<ModuleOp> run(std::variant<const std::string *, OwningOpRef<ModuleOp>> ir,
                          llvm::function_ref<void(PassManager &)> build) {
  MLIRContext &ctx = context();
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    os << where(d.getLocation()) << ": "
       << (d.getSeverity() == DiagnosticSeverity::Error ? "error: " : "note: ")
       << d << "\n";
    for (Diagnostic &note : d.getNotes())
      if (!StringRef(note.str()).starts_with("see current operation"))
        os << where(note.getLocation()) << ": note: " << note << "\n";
    return success();
  });
  OwningOpRef<ModuleOp> module;
  if (auto *text = std::get_if<const std::string *>(&ir))
    module = parseSourceString<ModuleOp>(**text, &ctx);
  else
    module = std::move(std::get<OwningOpRef<ModuleOp>>(ir));
  if (!module)
    throw std::runtime_error(diagnostics.empty() ? "cannot parse the kernel IR"
                                                 : diagnostics);
  PassManager pm(&ctx);
  build(pm);
  if (failed(pm.run(*module)))
    throw std::runtime_error(diagnostics);
  return module;
}

OwningOpRef<ModuleOp> run(const std::string &ir,
                          llvm::function_ref<void(PassManager &)> build) {
  return run(&ir, build);
}

std::string print(Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  op->print(os);
  return s;
}

/// The launch facts of the lowered kernels, as JSON (lowering/LaunchFacts.h).
std::string launchFacts(ModuleOp module) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::json::Value(llvm::json::Object{{"kernels", fakv::launchFacts(module)}});
  return s;
}

/// The payload of one stage of the GPU pipeline, and the launch facts (JSON)
/// from the llvm stage on; throws with the diagnostics.
std::pair<std::string, std::string> compileStage(const std::string &ir, const std::string &emit,
                                                 const fakv::FakvToCubinOptions &o) {
  if (emit == "fakv") {
    auto m = run(ir, [](PassManager &pm) { pm.addPass(createCanonicalizerPass()); });
    return {print(*m), ""};
  }
  if (emit == "fakvgpu") {
    auto m = run(ir, [&](PassManager &pm) { fakv::buildFakvToFakvGPUPipeline(pm, o); });
    return {print(*m), ""};
  }
  if (emit != "llvm" && emit != "ptx")
    throw std::invalid_argument("emit must be fakv, fakvgpu, llvm or ptx, got " + emit +
                                " (fakv.ptx assembles PTX into a cubin)");
  auto m = run(ir, [&](PassManager &pm) {
    fakv::buildFakvToFakvGPUPipeline(pm, o);
    fakv::buildFakvGPUToLLVMPipeline(pm, o);
  });
  std::string facts = launchFacts(*m);
  if (emit == "llvm")
    return {print(*m), facts};
  ModuleOp module = *m;
  std::string diagnostics;
  {
    llvm::raw_string_ostream os(diagnostics);
    ScopedDiagnosticHandler handler(&context(), [&](Diagnostic &d) {
      os << where(d.getLocation()) << ": " << d << "\n";
      return success();
    });
    PassManager pm(&context());
    GpuModuleToBinaryPassOptions binary;
    binary.compilationTarget = "isa";
    pm.addPass(createGpuModuleToBinaryPass(binary));
    if (failed(pm.run(module)))
      throw std::runtime_error("PTX generation failed: " + diagnostics);
  }
  std::string object;
  module->walk([&](gpu::BinaryOp bin) {
    for (Attribute a : bin.getObjects())
      object = cast<gpu::ObjectAttr>(a).getObject().getValue().str();
  });
  return {object, facts};
}

/// compile(ir, emit, stages, warp_specialize, chip, producer_registers,
/// consumer_registers) -> (payload, facts or None)
/// emit: fakv (verified, canonicalized), fakvgpu, llvm, ptx. The GIL is
/// released while it runs.
py::tuple compile(const std::string &ir, const std::string &emit,
                  unsigned stages, bool warpSpecialize, const std::string &chip,
                  unsigned producerRegisters, unsigned consumerRegisters) {
  fakv::FakvToCubinOptions o;
  o.stages = stages;
  o.warpSpecialize = warpSpecialize;
  o.chip = chip;
  o.producerRegisters = producerRegisters;
  o.consumerRegisters = consumerRegisters;
  o.format = "isa";
  std::pair<std::string, std::string> out;
  {
    WithoutGil release;
    out = compileStage(ir, emit, o);
  }
  if (out.second.empty())
    return py::make_tuple(out.first, py::none());
  return py::make_tuple(out.first, out.second);
}

/// The compiler-runtime helper LLVM's x86 backend calls to round an f32 to
/// bf16 where it keeps bf16 values in f32 registers (LLVM 22.1.8: across
/// phis). libgcc has it from GCC 13 on; Debian 12's GCC 12 does not, so the
/// JIT gets this one. Round to nearest even, NaN kept quiet; the bf16 is
/// returned as x86-64 returns one, in the low 16 bits of xmm0.
float truncToBF16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  uint32_t half = std::isnan(x) ? ((bits >> 16) | 0x40u) : ((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
  float out;
  std::memcpy(&out, &half, sizeof out);
  return out;
}

/// The host's CPU and features on every function, less the x86 bf16
/// conversions: VCVTNEPS2BF16 (AVX512-BF16, AVX-NE-CONVERT) flushes
/// subnormals to zero, so on hosts that have it a bf16 subnormal read as 0
/// (and results differed by host); without it LLVM rounds through
/// __truncsfbf2 (truncToBF16, exact). lit's %mlir-runner passes the same
/// -mattr.
void hostWithoutBF16Conversions(llvm::Module &m) {
  if (!llvm::Triple(llvm::sys::getProcessTriple()).isX86())
    return;
  static const std::string cpu = llvm::sys::getHostCPUName().str(), features = [] {
    std::string out;
    for (const auto &[name, on] : llvm::sys::getHostCPUFeatures())
      if (name != "avx512bf16" && name != "avxneconvert")
        out += std::string(on ? "+" : "-") + name.str() + ",";
    return out + "-avx512bf16,-avxneconvert";
  }();
  for (llvm::Function &f : m)
    if (!f.isDeclaration()) {
      f.addFnAttr("target-cpu", cpu);
      f.addFnAttr("target-features", features);
    }
}

/// A kernel module JIT-compiled for the host (the CPU path).
class CpuModule {
public:
  explicit CpuModule(const std::string &ir, const std::vector<std::string> &libs) {
    WithoutGil release;   // compiles without Python
    static bool init = [] {
      llvm::InitializeNativeTarget();
      llvm::InitializeNativeTargetAsmPrinter();
      return true;
    }();
    (void)init;
    // Packing first, to read each kernel's grid packing off (the launcher
    // checks grids against it before calling).
    auto packedModule = run(ir, [](PassManager &pm) { pm.addPass(fakv::createFakvPackGQA()); });
    packedModule->walk([&](func::FuncOp f) {
      if (auto p = f->getAttrOfType<DenseI32ArrayAttr>(
              fakv::FakvDialect::getGridPackingAttrName()))
        gridPacking[f.getName().str()] = std::vector<int>(p.asArrayRef().begin(), p.asArrayRef().end());
    });
    module = run(std::move(packedModule),
                 [](PassManager &pm) { fakv::buildFakvToLLVMCPUPipeline(pm); });
    // Each function's parameter kinds, which call() checks its arguments
    // against (too few read the packed array past its end: a segfault).
    module->walk([&](LLVM::LLVMFuncOp f) {
      if (f.isExternal())
        return;
      std::vector<std::string> kinds;
      for (Type t : f.getArgumentTypes()) {
        if (isa<LLVM::LLVMPointerType>(t))
          kinds.push_back("ptr");
        else if (t.isInteger(1) || t.isInteger(32) || t.isInteger(64))
          kinds.push_back("i" + std::to_string(t.getIntOrFloatBitWidth()));
        else
          kinds.push_back(t.isF32() ? "f32" : "(other)");
      }
      signatures[f.getName().str()] = std::move(kinds);
    });
    ExecutionEngineOptions options;
    // (Kept as a member: the engine may call it when it compiles, later.)
    transform = [optimize = makeOptimizingTransformer(2, 0, nullptr)](llvm::Module *m) {
      hostWithoutBF16Conversions(*m);
      return optimize(m);
    };
    options.transformer = transform;
    std::vector<llvm::StringRef> paths(libs.begin(), libs.end());
    options.sharedLibPaths = paths;
    auto created = ExecutionEngine::create(*module, options);
    if (!created)
      throw std::runtime_error("cannot JIT the kernel for the host: " +
                               llvm::toString(created.takeError()));
    engine = std::move(*created);
    engine->registerSymbols([](llvm::orc::MangleAndInterner interner) {
      llvm::orc::SymbolMap symbols;
      symbols[interner("__truncsfbf2")] = {llvm::orc::ExecutorAddr::fromPtr(&truncToBF16),
                                           llvm::JITSymbolFlags::Exported};
      return symbols;
    });
  }

  /// Calls `name` with (kind, value) arguments: ptr (an address), i1, i32,
  /// i64, f32; `extents`: the [lo, hi) byte ranges of the arrays the kernel
  /// may access (fakv-guard-cpu-memory; none: not checked). Returns the
  /// fault bits, then cleared: 1 an integer divided by zero (or INT_MIN by
  /// -1, fakv-guard-cpu-division), 2 an access outside the extents (skipped).
  int call(const std::string &name, const std::vector<std::pair<std::string, py::object>> &args,
           const std::vector<std::pair<uint64_t, uint64_t>> &extents) {
    auto found = signatures.find(name);
    if (found == signatures.end())
      throw std::invalid_argument("no function " + name + " in this module");
    std::vector<std::string> given;
    for (auto &arg : args)
      given.push_back(arg.first);
    if (given != found->second) {
      auto join = [](const std::vector<std::string> &kinds) {
        std::string out;
        for (const std::string &k : kinds)
          out += (out.empty() ? "" : ", ") + k;
        return out;
      };
      throw std::invalid_argument(
          name + " takes (" + join(found->second) + "), got (" + join(given) + ")" +
          (found->second.size() == given.size() + 6
               ? ": a kernel's own function also takes its program id and grid (six i32s); call "
                 "the launch function made for it (__fakv_launch) instead"
               : ""));
    }
    std::vector<std::unique_ptr<uint64_t>> storage;
    std::vector<void *> packed;
    for (auto &[kind, value] : args) {
      auto slot = std::make_unique<uint64_t>(0);
      if (kind == "ptr" || kind == "i64")
        *reinterpret_cast<int64_t *>(slot.get()) = value.cast<int64_t>();
      else if (kind == "i32")
        *reinterpret_cast<int32_t *>(slot.get()) = value.cast<int32_t>();
      else if (kind == "i1")
        *reinterpret_cast<bool *>(slot.get()) = value.cast<bool>();
      else if (kind == "f32")
        *reinterpret_cast<float *>(slot.get()) = value.cast<float>();
      else
        throw std::invalid_argument("unknown argument kind " + kind);
      packed.push_back(slot.get());
      storage.push_back(std::move(slot));
    }
    if (callMutexForks != forks) {   // a forked child: the thread that held it may have been the parent's
      (void)callMutex.release();     // (leaked: a mutex held is not destroyed)
      callMutex = std::make_unique<std::mutex>();
      callMutexForks = forks;
      if (int32_t *flags = global<int32_t>("fakv_cpu_fault", fault))
        *flags = 0;                  // (a call of the parent's, cut off: not this process's)
    }
    WithoutGil release;
    std::lock_guard<std::mutex> lock(*callMutex);  // (one call at a time: the globals are the module's)
    uint64_t *table = global<uint64_t>("fakv_cpu_extents", extentsTable);
    std::vector<uint64_t> pairs;                  // (the global holds their count and address)
    if (table) {
      for (auto [lo, hi] : extents)
        pairs.insert(pairs.end(), {lo, hi});
      table[0] = extents.size();
      table[1] = reinterpret_cast<uintptr_t>(pairs.data());
    }
    if (llvm::Error e = engine->invokePacked(name, packed))
      throw std::runtime_error("cannot call " + name + ": " + llvm::toString(std::move(e)));
    if (table)
      table[0] = 0;
    int32_t *flags = global<int32_t>("fakv_cpu_fault", fault);
    if (!flags)
      return 0;           // no division that may trap, no memory access
    int faults = *flags;
    *flags = 0;
    return faults;
  }

  /// Kernel name -> programs of the written grid per program, per axis
  /// (fakv-pack-gqa); kernels it did not pack are absent.
  std::map<std::string, std::vector<int>> gridPacking;
  /// Function name -> its parameters' kinds (ptr, i1, i32, i64, f32).
  std::map<std::string, std::vector<std::string>> signatures;

private:
  /// The JIT-ed module's global `name` (looked up once into `cached`), or
  /// null where the module has none.
  template <typename T>
  T *global(const char *name, std::optional<T *> &cached) {
    if (!cached) {
      auto found = engine->lookup(name);
      if (!found) {
        llvm::consumeError(found.takeError());
        cached = nullptr;
      } else {
        cached = static_cast<T *>(*found);
      }
    }
    return *cached;
  }

  OwningOpRef<ModuleOp> module;
  std::function<llvm::Error(llvm::Module *)> transform;
  std::unique_ptr<ExecutionEngine> engine;
  std::optional<int32_t *> fault;               // fakv_cpu_fault
  std::optional<uint64_t *> extentsTable;       // fakv_cpu_extents
  std::unique_ptr<std::mutex> callMutex = std::make_unique<std::mutex>();
  unsigned callMutexForks = forks;
};

} // namespace

PYBIND11_MODULE(_fakv, m) {
  m.doc() = "The fakv compiler (MLIR) for the fakv Python package";
  m.def("compile", &compile, py::arg("ir"), py::arg("emit"), py::arg("stages") = 2,
        py::arg("warp_specialize") = true, py::arg("chip") = "sm_90a",
        py::arg("producer_registers") = 0, py::arg("consumer_registers") = 0,
        "Compile fakv IR; returns (payload, launch facts as JSON or None)");
  py::class_<CpuModule>(m, "CpuModule")
      .def(py::init<const std::string &, const std::vector<std::string> &>(),
           py::arg("ir"), py::arg("shared_libs") = std::vector<std::string>())
      .def("call", &CpuModule::call, py::arg("name"), py::arg("args"),
           py::arg("extents") = std::vector<std::pair<uint64_t, uint64_t>>())
      .def_readonly("grid_packing", &CpuModule::gridPacking);
  m.attr("version") = "0.1.0";
  pthread_atfork(nullptr, nullptr, [] {
    ++forks;
    WithoutGil::afterForkInChild();
  });
  py::module_::import("atexit").attr("register")(py::cpp_function(&WithoutGil::waitAtExit));
}
