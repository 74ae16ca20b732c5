/* examples/c_engine.c: a small inference "engine" in C11, instrumented with strata's C API.
 *
 * A toy decoder: for each generated token, embed it, run a few layers (attention over a
 * growing KV cache, then an MLP) and pick the next token. Every stage is a strata range; each
 * token is a step of a schedule (two windows of 8 tokens, each written to a trace of its own)
 * and samples a counter; at the end the key_averages table of the last window is printed.
 * strata's implementation is compiled in one C++ file (c_engine_strata.cpp); this file is
 * plain C, and the program is linked by g++ (or by gcc with -lstdc++ -lm -pthread):
 *
 *   gcc -std=c11 -Wall -Wextra -pedantic -Iinclude -c examples/c_engine.c
 *   g++ -std=c++20 -Iinclude -c examples/c_engine_strata.cpp
 *   g++ c_engine.o c_engine_strata.o -pthread -lm -o c_engine
 *   ./c_engine [OUTPUT_DIR] [TOKENS]     # OUTPUT_DIR/trace_step5-12.json, trace_step16-23.json
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <strata/strata.h>

enum { dim = 64, layers = 4, vocab = 256, max_tokens = 512 };

typedef struct engine {
  float weights[layers][dim][dim];
  float embedding[vocab][dim];
  float keys[layers][max_tokens][dim];
  float values[layers][max_tokens][dim];
  float x[dim];
  float scratch[dim];
  float scores[max_tokens];
} engine;

static void matvec(const float w[dim][dim], const float* in, float* out) {
  strata_push_layer(STRATA_LAYER_FRAMEWORK, "aten::mv");
  for (int i = 0; i < dim; ++i) {
    float s = 0.0f;
    for (int j = 0; j < dim; ++j) s += w[i][j] * in[j];
    out[i] = s;
  }
  strata_pop();
}

static void attention(engine* e, int layer, int position) {
  strata_push("attention");
  for (int i = 0; i < dim; ++i) {
    e->keys[layer][position][i] = e->x[i];
    e->values[layer][position][i] = e->scratch[i];
  }
  strata_push_layer(STRATA_LAYER_FRAMEWORK, "aten::softmax");
  float max = -INFINITY, sum = 0.0f;
  for (int t = 0; t <= position; ++t) {
    float s = 0.0f;
    for (int i = 0; i < dim; ++i) s += e->x[i] * e->keys[layer][t][i];
    e->scores[t] = s / sqrtf((float)dim);
    if (e->scores[t] > max) max = e->scores[t];
  }
  for (int t = 0; t <= position; ++t) sum += e->scores[t] = expf(e->scores[t] - max);
  strata_pop();
  for (int i = 0; i < dim; ++i) {
    float v = 0.0f;
    for (int t = 0; t <= position; ++t) v += e->scores[t] / sum * e->values[layer][t][i];
    e->x[i] += v;
  }
  strata_pop();
}

static void mlp(engine* e, int layer) {
  char name[32];
  /* A name built at run time: strata copies it, the buffer may change afterwards. */
  snprintf(name, sizeof name, "mlp %d", layer);
  strata_push(name);
  matvec((const float (*)[dim])e->weights[layer], e->x, e->scratch);
  for (int i = 0; i < dim; ++i) e->x[i] += e->scratch[i] > 0.0f ? e->scratch[i] : 0.0f;
  strata_pop();
}

static int decode_one(engine* e, int token, int position) {
  strata_push("decode token");
  strata_push("embed");
  for (int i = 0; i < dim; ++i) e->x[i] = e->embedding[token][i];
  strata_pop();
  for (int l = 0; l < layers; ++l) {
    matvec((const float (*)[dim])e->weights[l], e->x, e->scratch);
    attention(e, l, position);
    mlp(e, l);
  }
  strata_push("sample");
  int best = 0;
  float best_score = -INFINITY;
  for (int v = 0; v < vocab; ++v) {
    float s = 0.0f;
    for (int i = 0; i < dim; ++i) s += e->x[i] * e->embedding[v][i];
    if (s > best_score) best_score = s, best = v;
  }
  strata_pop();
  strata_pop();
  return best;
}

static const char usage[] =
    "c_engine: a small C11 decoder instrumented with strata's C API\n"
    "\n"
    "usage: c_engine [OUTPUT_DIR] [TOKENS]\n"
    "\n"
    "  OUTPUT_DIR                  where the trace goes (default: strata-out/c_engine)\n"
    "  TOKENS                      tokens to generate, 1 to 512 (default: 64)\n"
    "  --help                      print this and exit\n"
    "\n"
    "writes:\n"
    "  OUTPUT_DIR/trace_step<first>-<last>.json\n"
    "                              a trace per recorded window of the schedule (two windows of\n"
    "                              8 tokens after 2 skipped and 3 idle; a partial one if TOKENS\n"
    "                              ends inside a window): a range per stage, a step per token\n"
    "  (stdout)                    the tokens generated, then the last window's table\n";

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(usage, stdout);
      return 0;
    }
    if (argv[i][0] == '-') {
      fprintf(stderr, "c_engine: unknown option %s\n(c_engine --help says more)\n", argv[i]);
      return 2;
    }
  }
  const char* out = argc > 1 ? argv[1] : "strata-out/c_engine";
  const int tokens = argc > 2 ? atoi(argv[2]) : 64;
  if (tokens < 1 || tokens > max_tokens) {
    fprintf(stderr, "c_engine: TOKENS must be between 1 and %d\n", max_tokens);
    return 2;
  }
  engine* e = calloc(1, sizeof *e);
  if (e == NULL) return 1;
  unsigned seed = 1;
  for (int l = 0; l < layers; ++l)
    for (int i = 0; i < dim; ++i)
      for (int j = 0; j < dim; ++j)
        e->weights[l][i][j] = ((float)((seed = seed * 1103515245u + 12345u) >> 16 & 0x7fff) / 32768.0f - 0.5f) / dim;
  for (int v = 0; v < vocab; ++v)
    for (int i = 0; i < dim; ++i)
      e->embedding[v][i] = (float)((seed = seed * 1103515245u + 12345u) >> 16 & 0x7fff) / 32768.0f - 0.5f;

  /* The schedule: 2 tokens skipped (caches warming), then twice 2 idle tokens, 1 of warmup
   * and 8 recorded; each window's trace is written in the background as it ends. */
  char output[1024];
  snprintf(output, sizeof output, "%s/trace.json", out);
  strata_config config = STRATA_CONFIG_INIT;
  config.output = output;
  config.schedule.skip_first = 2;
  config.schedule.wait = 2;
  config.schedule.warmup = 1;
  config.schedule.active = 8;
  config.schedule.repeat = 2;
  const int started = strata_start_ex(&config);
  if (started == STRATA_ERROR_RUNNING) {
    /* Another session records this run (STRATA_PROFILE=1, say): its trace is written at exit. */
    fputs("c_engine: another strata session records this run; the example's schedule is off\n", stderr);
  } else if (started != STRATA_OK) {
    free(e);
    return 1;
  }
  strata_set_thread_name("decode loop");
  int token = 1;
  for (int position = 0; position < tokens; ++position) {
    token = decode_one(e, token, position);
    strata_counter("kv cache tokens", (double)(position + 1));
    strata_step();
  }
  strata_instant("generation done");
  const int status = started == STRATA_OK ? strata_stop_and_export() /* names the windows' files */
                                           : STRATA_OK;
  printf("c_engine: %d tokens, last token %d\n", tokens, token);
  if (started != STRATA_OK) {
    free(e);
    return 0;
  }

  /* The last window's table: asked once for its length, then into a buffer of that size. */
  const int length = strata_table(NULL, 0, "self_cpu_time_total", 10);
  char* table = length >= 0 ? malloc((size_t)length + 1) : NULL;
  if (table != NULL && strata_table(table, (size_t)length + 1, "self_cpu_time_total", 10) >= 0)
    fputs(table, stdout);
  free(table);
  free(e);
  return status == STRATA_OK ? 0 : 1;
}
