/* target.c: the host target machine and LLVM's optimisation pipeline.
 *
 * The CPU name AND feature string are passed explicitly: LLVM 14-16 call
 * recent CPUs "generic", and with the name alone they would emit plain
 * SSE2. The pipeline is the new pass manager's "default<On>" through
 * LLVMRunPasses (LLVM >= 13), after LLVMVerifyModule. */
#include "backend/llvm/lower.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/Error.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <pthread.h>
#include <stdio.h>

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init_native(void) {
  LLVMInitializeNativeTarget();
  LLVMInitializeNativeAsmPrinter();
  LLVMInitializeNativeAsmParser();
}

void llvm_init_native(void) { pthread_once(&init_once, init_native); }

LLVMTargetMachineRef llvm_host_tm(const cpu_options *o, bool pic, char *err, size_t errlen) {
  llvm_init_native();
  char *triple = LLVMGetDefaultTargetTriple();
  LLVMTargetRef target;
  char *msg = NULL;
  if (LLVMGetTargetFromTriple(triple, &target, &msg)) {
    snprintf(err, errlen, "LLVM target %s: %s", triple, msg ? msg : "?");
    LLVMDisposeMessage(msg);
    LLVMDisposeMessage(triple);
    return NULL;
  }
  char *cpu = o->cpu_name ? NULL : LLVMGetHostCPUName();
  char *feat = o->cpu_features ? NULL : LLVMGetHostCPUFeatures();
  LLVMCodeGenOptLevel lvl = o->opt_level <= 0 ? LLVMCodeGenLevelNone
                            : o->opt_level == 1 ? LLVMCodeGenLevelLess
                            : o->opt_level == 2 ? LLVMCodeGenLevelDefault
                                                : LLVMCodeGenLevelAggressive;
  LLVMTargetMachineRef tm = LLVMCreateTargetMachine(
      target, triple, o->cpu_name ? o->cpu_name : cpu, o->cpu_features ? o->cpu_features : feat,
      lvl, pic ? LLVMRelocPIC : LLVMRelocDefault, LLVMCodeModelDefault);
  if (!tm) snprintf(err, errlen, "cannot create an LLVM target machine for %s", triple);
  if (cpu) LLVMDisposeMessage(cpu);
  if (feat) LLVMDisposeMessage(feat);
  LLVMDisposeMessage(triple);
  return tm;
}

/* Below 2^22 estimated operations a run of O0 code (no SROA: every loop
 * variable in memory) costs a few milliseconds more than O3's, less than
 * the 0.1-0.4 s that O1-O3's passes and code generator take on the
 * shipped samples; from there on O3, whose compile is then small beside
 * the runs it speeds up. */
int llvm_level_for_work(double work) { return work < 4194304.0 ? 0 : 3; }

bool llvm_optimise(emitter *e) {
  char *msg = NULL;
  if (LLVMVerifyModule(e->mod, LLVMReturnStatusAction, &msg)) {
    llvm_fail(e, ST_INTERNAL, "generated LLVM IR does not verify: %.400s", msg ? msg : "");
    LLVMDisposeMessage(msg);
    return false;
  }
  LLVMDisposeMessage(msg);
  int lvl = e->opt.opt_level < 0 ? 0 : e->opt.opt_level > 3 ? 3 : e->opt.opt_level;
  char pipeline[32];
  snprintf(pipeline, sizeof pipeline, "default<O%d>", lvl);
  LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
  LLVMPassBuilderOptionsSetLoopVectorization(po, lvl >= 2);
  LLVMPassBuilderOptionsSetSLPVectorization(po, lvl >= 2);
  LLVMPassBuilderOptionsSetLoopInterleaving(po, lvl >= 2);
  LLVMPassBuilderOptionsSetLoopUnrolling(po, lvl >= 2);
  LLVMErrorRef er = LLVMRunPasses(e->mod, pipeline, e->tm, po);
  LLVMDisposePassBuilderOptions(po);
  if (er) {
    char *m = LLVMGetErrorMessage(er);
    llvm_fail(e, ST_INTERNAL, "LLVM pass pipeline: %s", m);
    LLVMDisposeErrorMessage(m);
    return false;
  }
  if (e->opt.dump_llvm && !strcmp(e->opt.dump_llvm, "-")) {
    char *m = LLVMPrintModuleToString(e->mod);
    bool ok = fputs(m, stdout) >= 0 && fflush(stdout) == 0;
    LLVMDisposeMessage(m);
    if (!ok) return llvm_fail(e, ST_IO_ERROR, "cannot write the LLVM IR to standard output");
  } else if (e->opt.dump_llvm) {
    char *m = NULL;
    if (LLVMPrintModuleToFile(e->mod, e->opt.dump_llvm, &m)) {
      llvm_fail(e, ST_IO_ERROR, "cannot write %s: %s", e->opt.dump_llvm, m ? m : "");
      LLVMDisposeMessage(m);
      return false;
    }
  }
  return true;
}
