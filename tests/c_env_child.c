/* A C engine with strata's C API and nothing else of strata but its implementation (the build's,
 * linked as a C engine links its 4-line implementation file): what a C program looks like to
 * STRATA_PROFILE=1, STRATA_ONDEMAND=1
 * and STRATA_CRASH_DUMP=1. check_c_env.py drives it through stdin, one command a line, so that
 * every step is taken when the test says so:
 *
 *   work N       N steps, each a "decode" range (user layer) around an "aten::mm" range
 *                (framework layer), then strata_step(); prints "worked N"
 *   start DIR    strata_start(DIR); prints "start <status>"
 *   stop         strata_stop_and_export(); prints "stop <status>"
 *   handlers     prints "handlers:" and the signals that are not at their default action
 *   abort        abort() (core dumps off first)
 *   quit         returns from main (exit status 0)
 */
#define _POSIX_C_SOURCE 200809L

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <strata/strata.h>

static char kv_block[64]; /* memory events: recorded only with STRATA_PROFILE_MEMORY=1 */

static void work(long steps) {
  long i;
  for (i = 0; i < steps; ++i) {
    strata_push("decode");
    strata_push_layer(STRATA_LAYER_FRAMEWORK, "aten::mm");
    strata_alloc(kv_block, sizeof kv_block);
    strata_alloc_device(STRATA_DEVICE_NEURON, 0, kv_block + 32, 16);
    strata_free_device(STRATA_DEVICE_NEURON, 0, kv_block + 32);
    strata_free(kv_block);
    strata_set_flops(2ull * 64 * 64 * 64);
    strata_pop();
    strata_pop();
    strata_step();
  }
}

static void print_handlers(void) {
  static const struct {
    const char* name;
    int number;
  } signals[] = {{"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT}, {"ILL", SIGILL},
                 {"ABRT", SIGABRT}, {"BUS", SIGBUS},   {"FPE", SIGFPE},   {"USR1", SIGUSR1},
                 {"SEGV", SIGSEGV}, {"USR2", SIGUSR2}, {"ALRM", SIGALRM}, {"TERM", SIGTERM}};
  size_t i;
  printf("handlers:");
  for (i = 0; i < sizeof signals / sizeof signals[0]; ++i) {
    struct sigaction current;
    memset(&current, 0, sizeof current);
    if (sigaction(signals[i].number, NULL, &current) != 0) {
      printf(" %s(unknown)", signals[i].name);
    } else if ((current.sa_flags & SA_SIGINFO) != 0 || current.sa_handler != SIG_DFL) {
      printf(" %s", signals[i].name);
    }
  }
  printf("\n");
}

int main(void) {
  char line[512];
  strata_set_thread_name("c main");
  while (fgets(line, sizeof line, stdin) != NULL) {
    char command[32] = "";
    char argument[480] = "";
    if (sscanf(line, "%31s %479s", command, argument) < 1) continue;
    if (strcmp(command, "work") == 0) {
      const long n = strtol(argument, NULL, 10);
      work(n);
      printf("worked %ld\n", n);
    } else if (strcmp(command, "start") == 0) {
      printf("start %d\n", strata_start(argument));
    } else if (strcmp(command, "stop") == 0) {
      printf("stop %d\n", strata_stop_and_export());
    } else if (strcmp(command, "handlers") == 0) {
      print_handlers();
    } else if (strcmp(command, "abort") == 0) {
      const struct rlimit no_core = {0, 0};
      setrlimit(RLIMIT_CORE, &no_core);
      fflush(stdout);
      abort();
    } else if (strcmp(command, "quit") == 0) {
      break;
    } else {
      printf("unknown command %s\n", command);
    }
    fflush(stdout);
  }
  return 0;
}
