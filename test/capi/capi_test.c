/* The C API (fm/fm.h) from C99: every function, against a tiny model.
 *
 *   capi_test run MODEL.fmb WORK   prints one line per case ("name: ids" or
 *                                  "name: text"), which check_capi.py
 *                                  compares with fm-run's output for the
 *                                  same artifact and options; WORK holds the
 *                                  inputs check_capi.py wrote (prompt ids,
 *                                  schema, grammar, tools, text, adapter).
 *   capi_test misuse MODEL.fmb WORK  calls every function with NULLs, wrong
 *                                  struct sizes, freed handles and bad
 *                                  files; checks each code and message.
 *   capi_test vlm VLM.fmb WORK     images (WORK/image.png, WORK/image.f32)
 *                                  into a VLM's prompt of ids.
 *
 * Compiled as C99 with -Wall -Wextra -pedantic -Werror.
 */
#define _POSIX_C_SOURCE 200809L
#include "fm/fm.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int failures = 0;
static int checks = 0;

#define CHECK_OK(call)                                                         \
  do {                                                                         \
    fm_status s_ = (call);                                                     \
    if (s_ != FM_STATUS_OK) {                                                  \
      fprintf(stderr, "%s:%d: %s: %s: %s\n", __FILE__, __LINE__, #call,        \
              fm_status_name(s_), fm_last_error());                            \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

/* A failing call: its code and a substring of fm_last_error(). */
static void expect(fm_status got, fm_status want, const char *needle,
                   const char *what, int line) {
  const char *message = fm_last_error();
  ++checks;
  if (got != want || !strstr(message, needle)) {
    ++failures;
    fprintf(stderr, "FAIL line %d (%s): got %s \"%s\", want %s with \"%s\"\n",
            line, what, fm_status_name(got), message, fm_status_name(want),
            needle);
  }
}
#define EXPECT(call, want, needle) expect((call), (want), (needle), #call, __LINE__)

static char *readFile(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  char *data;
  long n;
  if (!f) {
    fprintf(stderr, "cannot open %s\n", path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  data = malloc((size_t)n + 1);
  if (!data || fread(data, 1, (size_t)n, f) != (size_t)n) {
    fprintf(stderr, "cannot read %s\n", path);
    exit(1);
  }
  data[n] = '\0';
  fclose(f);
  if (size)
    *size = (size_t)n;
  return data;
}

static char *workFile(const char *work, const char *name, size_t *size) {
  char path[4096];
  snprintf(path, sizeof(path), "%s/%s", work, name);
  return readFile(path, size);
}

/* WORK/prompt_ids.txt: ids separated by spaces. */
static size_t promptIds(const char *work, int32_t *ids, size_t capacity) {
  char *text = workFile(work, "prompt_ids.txt", NULL);
  char *p = text, *end;
  size_t n = 0;
  for (;;) {
    long v = strtol(p, &end, 10);
    if (end == p || n == capacity)
      break;
    ids[n++] = (int32_t)v;
    p = end;
  }
  free(text);
  return n;
}

static void printIds(const char *name, const int32_t *ids, size_t n) {
  size_t i;
  printf("%s:", name);
  for (i = 0; i < n; ++i)
    printf(" %d", (int)ids[i]);
  printf("\n");
}

/* The text as one line: its bytes in hex (any byte survives). */
static void printText(const char *name, const char *text, size_t size) {
  size_t i;
  printf("%s: ", name);
  for (i = 0; i < size; ++i)
    printf("%02x", (unsigned char)text[i]);
  printf("\n");
}

/* Streaming: the pieces, concatenated, must be the result's text. */
typedef struct Stream {
  char text[65536];
  size_t size;
  int tokens;
} Stream;

static int onText(const char *text, size_t size, void *user) {
  Stream *s = (Stream *)user;
  if (s->size + size < sizeof(s->text)) {
    memcpy(s->text + s->size, text, size);
    s->size += size;
  }
  return 1;
}

static int onToken(int32_t token, void *user) {
  Stream *s = (Stream *)user;
  (void)token;
  ++s->tokens;
  return 1;
}

static int stopAfterThree(int32_t token, void *user) {
  Stream *s = (Stream *)user;
  (void)token;
  return ++s->tokens < 3;
}

/* Cancel from another thread: the callback hands the session to a thread
 * after the second token and waits until that thread has cancelled. */
typedef struct Cancel {
  fm_session *session;
  pthread_mutex_t mutex;
  pthread_cond_t cond;
  int asked, done, tokens;
  fm_status status;
} Cancel;

static void *canceller(void *arg) {
  Cancel *c = (Cancel *)arg;
  pthread_mutex_lock(&c->mutex);
  while (!c->asked)
    pthread_cond_wait(&c->cond, &c->mutex);
  c->status = fm_session_cancel(c->session);
  c->done = 1;
  pthread_cond_broadcast(&c->cond);
  pthread_mutex_unlock(&c->mutex);
  return NULL;
}

static int cancelAfterTwo(int32_t token, void *user) {
  Cancel *c = (Cancel *)user;
  (void)token;
  if (++c->tokens == 2) {
    pthread_mutex_lock(&c->mutex);
    c->asked = 1;
    pthread_cond_broadcast(&c->cond);
    while (!c->done)
      pthread_cond_wait(&c->cond, &c->mutex);
    pthread_mutex_unlock(&c->mutex);
  }
  return 1;
}

/* Cancel inside a prefill: a thread cancels as soon as the prefill of a
 * long prompt has started. The prefill stops between chunks: CANCELLED,
 * the position a chunk boundary short of the prompt, and prefilling the
 * rest gives the logits an uninterrupted prefill gives. A prefill that
 * ended before the cancel came is tried again (up to 20 times); the cancel
 * then left pending stops the next prefill at its start. Prints
 * "prefill cancelled: STATUS position<n logits-equal message". */
typedef struct PrefillCancel {
  fm_session *session;
  pthread_mutex_t mutex;
  int started;
  fm_status status;
} PrefillCancel;

static void *prefillCanceller(void *arg) {
  PrefillCancel *c = (PrefillCancel *)arg;
  int started = 0;
  while (!started) {
    pthread_mutex_lock(&c->mutex);
    started = c->started;
    pthread_mutex_unlock(&c->mutex);
  }
  {
    /* Into the prefill's first chunk. */
    struct timespec pause = {0, 200000};
    nanosleep(&pause, NULL);
  }
  c->status = fm_session_cancel(c->session);
  return NULL;
}

static void cancelPrefill(fm_model *model, int64_t vocab, const int32_t *ids, size_t n) {
  fm_session *session = NULL;
  fm_session_params sp = fm_session_params_default();
  const float *logits = NULL;
  float *want = malloc((size_t)vocab * sizeof(float));
  int64_t position = 0;
  int attempt, equal = 0;
  fm_status s = FM_STATUS_OK;
  char message[200] = "";
  sp.threads = 1;
  CHECK_OK(fm_session_create(model, &sp, &session));
  CHECK_OK(fm_session_prefill(session, ids, n, 0, &logits));
  memcpy(want, logits, (size_t)vocab * sizeof(float));
  for (attempt = 0; attempt < 20; ++attempt) {
    PrefillCancel c;
    pthread_t thread;
    c.session = session;
    c.started = 0;
    c.status = FM_STATUS_ERROR;
    pthread_mutex_init(&c.mutex, NULL);
    CHECK_OK(fm_session_reset(session));
    pthread_create(&thread, NULL, prefillCanceller, &c);
    pthread_mutex_lock(&c.mutex);
    c.started = 1;
    pthread_mutex_unlock(&c.mutex);
    s = fm_session_prefill(session, ids, n, 0, &logits);
    pthread_join(thread, NULL);
    pthread_mutex_destroy(&c.mutex);
    CHECK_OK(c.status);
    if (s == FM_STATUS_CANCELLED && strstr(fm_session_error(session), "before the prefill"))
      continue; /* the cancel came first: it stopped the prefill at its start */
    if (s != FM_STATUS_OK)
      break;
    /* It ended first: the cancel is pending and stops the next one. */
    if (fm_session_prefill(session, ids, 1, 0, NULL) != FM_STATUS_CANCELLED) {
      printf("prefill cancelled: a pending cancel did not stop the next prefill\n");
      free(want);
      CHECK_OK(fm_session_free(session));
      return;
    }
  }
  snprintf(message, sizeof(message), "%s", fm_session_error(session));
  CHECK_OK(fm_session_position(session, &position));
  if (s == FM_STATUS_CANCELLED && position < (int64_t)n) {
    if (position == 0)
      CHECK_OK(fm_session_prefill(session, ids, n, 0, &logits));
    else
      CHECK_OK(fm_session_prefill(session, ids + position, n - (size_t)position, 0,
                                  &logits));
    equal = memcmp(want, logits, (size_t)vocab * sizeof(float)) == 0;
  }
  printf("prefill cancelled: %s %d %d [%s]\n", fm_status_name(s),
         position < (int64_t)n, equal, message);
  free(want);
  CHECK_OK(fm_session_free(session));
}

static void greedyLoop(fm_session *session, fm_sampler *greedy,
                       const int32_t *prompt, size_t n, int steps,
                       int32_t *out) {
  const float *logits = NULL;
  int i;
  CHECK_OK(fm_session_prefill(session, prompt, n, 0, &logits));
  for (i = 0; i < steps; ++i) {
    CHECK_OK(fm_session_sample(session, greedy, logits, &out[i]));
    if (i + 1 < steps)
      CHECK_OK(fm_session_decode(session, out[i], &logits));
  }
}

/* Speculative decoding (fm-run --draft / --lookup): greedy, sampled and
 * text generations with a draft model's session, and prompt lookup. */
static void speculative(fm_model *model, const char *work, const int32_t *prompt,
                        size_t n, fm_sampler *greedy, const fm_sampler_params *sampledParams) {
  fm_model *draftModel = NULL;
  fm_session *session = NULL, *draft = NULL, *self = NULL;
  fm_sampler *sampled = NULL, *draftSampled = NULL;
  fm_session_params sp = fm_session_params_default();
  fm_sampler_params dp = *sampledParams;
  fm_speculative_params spec = fm_speculative_params_default();
  fm_generate_params gp = fm_generate_params_default();
  fm_generation g = fm_generation_default();
  const char *json = NULL;
  char path[4096];
  char *text;

  snprintf(path, sizeof(path), "%s/draft.fmb", work);
  CHECK_OK(fm_model_load(path, NULL, &draftModel));
  sp.threads = 1;
  CHECK_OK(fm_session_create(model, &sp, &session));
  CHECK_OK(fm_session_create(draftModel, &sp, &draft));
  CHECK_OK(fm_sampler_create(sampledParams, &sampled));
  dp.seed = sampledParams->seed + 1; /* fm-run's draft sampler */
  CHECK_OK(fm_sampler_create(&dp, &draftSampled));
  gp.max_new_tokens = 12;

  /* A draft that agrees with the target (its own model): every round
   * takes drafted tokens. */
  CHECK_OK(fm_session_create(model, &sp, &self));
  spec.draft = self;
  spec.draft_max = 3;
  CHECK_OK(fm_session_set_speculative(session, &spec));
  CHECK_OK(fm_session_generate_tokens(session, prompt, n, greedy, &gp, &g));
  printIds("speculative self", g.tokens, g.n_tokens);
  CHECK_OK(fm_session_stats_json(session, &json));
  printf("speculative stats: %s\n", json);

  /* Another model of the same tokenizer. */
  CHECK_OK(fm_session_reset(session));
  spec.draft = draft;
  CHECK_OK(fm_session_set_speculative(session, &spec));
  CHECK_OK(fm_session_generate_tokens(session, prompt, n, greedy, &gp, &g));
  printIds("speculative draft", g.tokens, g.n_tokens);

  CHECK_OK(fm_session_reset(session));
  spec.draft_sampler = draftSampled;
  CHECK_OK(fm_session_set_speculative(session, &spec));
  CHECK_OK(fm_session_generate_tokens(session, prompt, n, sampled, &gp, &g));
  printIds("speculative sampled", g.tokens, g.n_tokens);

  CHECK_OK(fm_session_reset(session));
  text = workFile(work, "prompt.txt", NULL);
  CHECK_OK(fm_session_generate_text(session, text, greedy, &gp, &g));
  printIds("speculative text", g.tokens, g.n_tokens);
  free(text);

  CHECK_OK(fm_session_reset(session));
  spec = fm_speculative_params_default();
  spec.lookup_ngram = 2;
  CHECK_OK(fm_session_set_speculative(session, &spec));
  CHECK_OK(fm_session_generate_tokens(session, prompt, n, greedy, &gp, &g));
  printIds("speculative lookup", g.tokens, g.n_tokens);

  /* Plain again: no speculative counts in the stats. */
  CHECK_OK(fm_session_set_speculative(session, NULL));
  CHECK_OK(fm_session_reset(session));
  CHECK_OK(fm_session_generate_tokens(session, prompt, n, greedy, &gp, &g));
  printIds("speculative off", g.tokens, g.n_tokens);
  CHECK_OK(fm_session_stats_json(session, &json));
  printf("speculative off stats: %d\n", strstr(json, "drafted") == NULL);

  CHECK_OK(fm_sampler_free(sampled));
  CHECK_OK(fm_sampler_free(draftSampled));
  CHECK_OK(fm_session_free(draft));
  CHECK_OK(fm_session_free(self));
  CHECK_OK(fm_session_free(session));
  CHECK_OK(fm_model_free(draftModel));
}

static int run(const char *modelPath, const char *work) {
  fm_model *model = NULL, *fromBuffer = NULL;
  fm_session *session = NULL, *base = NULL;
  fm_sampler *greedy = NULL, *sampled = NULL;
  fm_tokenizer *tokenizer = NULL, *opened = NULL;
  fm_constraint *schema = NULL, *regex = NULL, *gbnf = NULL, *tools = NULL;
  fm_adapter *adapter = NULL, *adapterFromBuffer = NULL;
  fm_model_info info = fm_model_info_default();
  fm_tokenizer_info tinfo = fm_tokenizer_info_default();
  fm_sampler_params sp = fm_sampler_params_default();
  fm_session_params sessionParams = fm_session_params_default();
  fm_generate_params gp = fm_generate_params_default();
  fm_generation g = fm_generation_default();
  fm_constraint_params cp = fm_constraint_params_default();
  fm_perplexity_params pp = fm_perplexity_params_default();
  fm_perplexity_result pr = fm_perplexity_result_default();
  fm_device_info device = fm_device_info_default();
  fm_load_params lp = fm_load_params_default();
  int32_t prompt[256], out[64], ids[1024];
  size_t n, i, count, size, bufferSize;
  int64_t position;
  const int32_t *context;
  const char *json;
  char *text, *buffer;
  char rendered[8192], decoded[8192];
  Stream stream;
  Cancel cancel;
  pthread_t thread;
  const fm_adapter *attach[1];
  float scale = 0.5f;
  const char *stops[1];

  printf("version: %s abi %d\n", fm_version(), fm_abi_version());
  if (fm_abi_version() != FM_ABI_VERSION)
    return 1;

  /* Devices: the CPU is always built in and present. */
  CHECK_OK(fm_device_count(&count));
  for (i = 0; i < count; ++i) {
    CHECK_OK(fm_device_get(i, &device));
    if (strcmp(device.name, "cpu") == 0)
      printf("device cpu: %d %d\n", device.built_in, device.present);
  }

  lp.device = "cpu";
  CHECK_OK(fm_model_load(modelPath, &lp, &model));
  CHECK_OK(fm_model_info_get(model, &info));
  printf("info: vocab %lld context %lld tokenizer %d chat %d decoder %d image %d "
         "family %s device %s stop %d\n",
         (long long)info.vocab_size, (long long)info.context_length,
         info.has_tokenizer, info.has_chat_template, info.has_decoder,
         info.has_image_encoder, info.family, info.device,
         info.n_stop_ids ? (int)info.stop_ids[0] : -1);
  printf("model error: [%s]\n", fm_model_error(model));

  sessionParams.threads = 1;
  CHECK_OK(fm_session_create(model, &sessionParams, &session));
  CHECK_OK(fm_sampler_create(NULL, &greedy));
  sp.temperature = 0.8f;
  sp.top_k = 40;
  sp.top_p = 0.9f;
  sp.seed = 7;
  CHECK_OK(fm_sampler_create(&sp, &sampled));
  n = promptIds(work, prompt, 256);

  /* Ids in, ids out: fm-run --tokens. */
  gp.max_new_tokens = 12;
  memset(&stream, 0, sizeof(stream));
  gp.on_token = onToken;
  gp.user_data = &stream;
  CHECK_OK(fm_session_generate_tokens(session, prompt, n, greedy, &gp, &g));
  printIds("tokens", g.tokens, g.n_tokens);
  printf("tokens streamed: %d stop %s\n", stream.tokens, g.stop_name);
  CHECK_OK(fm_session_position(session, &position));
  printf("position: %lld\n", (long long)position);

  /* The context: keep the prompt, generate again: the same ids. */
  CHECK_OK(fm_session_tokens(session, &context, &count));
  printf("context: %d\n", count == (size_t)position && context[0] == prompt[0]);
  CHECK_OK(fm_session_keep_prefix(session, (int64_t)n - 1));
  CHECK_OK(fm_session_generate_tokens(session, prompt + n - 1, 1, greedy, &gp, &g));
  printIds("kept", g.tokens, g.n_tokens);

  /* The same by hand: prefill, sample, decode. */
  CHECK_OK(fm_session_reset(session));
  greedyLoop(session, greedy, prompt, n, 12, out);
  printIds("loop", out, 12);

  /* A callback that stops, and all the logits of a prefill. */
  CHECK_OK(fm_session_reset(session));
  memset(&stream, 0, sizeof(stream));
  gp.on_token = stopAfterThree;
  CHECK_OK(fm_session_generate_tokens(session, prompt, n, greedy, &gp, &g));
  printf("stopped: %u %s\n", (unsigned)g.n_tokens, g.stop_name);
  gp.on_token = NULL;
  {
    const float *all = NULL;
    CHECK_OK(fm_session_reset(session));
    CHECK_OK(fm_session_prefill(session, prompt, n, 1, &all));
    printf("all logits: %d\n", all != NULL);
  }

  /* Sampled: temperature, top-k, top-p, seed. */
  CHECK_OK(fm_session_reset(session));
  CHECK_OK(fm_session_generate_tokens(session, prompt, n, sampled, &gp, &g));
  printIds("sampled", g.tokens, g.n_tokens);

  /* Cancel from another thread. */
  CHECK_OK(fm_session_reset(session));
  memset(&cancel, 0, sizeof(cancel));
  cancel.session = session;
  pthread_mutex_init(&cancel.mutex, NULL);
  pthread_cond_init(&cancel.cond, NULL);
  pthread_create(&thread, NULL, canceller, &cancel);
  gp.on_token = cancelAfterTwo;
  gp.user_data = &cancel;
  gp.max_new_tokens = 50;
  {
    fm_status s = fm_session_generate_tokens(session, prompt, n, greedy, &gp, &g);
    pthread_join(thread, NULL);
    printf("cancelled: %s %u %s [%s]\n", fm_status_name(s), (unsigned)g.n_tokens,
           fm_status_name(cancel.status), fm_session_error(session));
  }
  pthread_mutex_destroy(&cancel.mutex);
  pthread_cond_destroy(&cancel.cond);
  gp = fm_generate_params_default();
  for (i = 0; i < sizeof(ids) / sizeof(ids[0]); ++i)
    ids[i] = (int32_t)((i * 7919u + 13u) % (size_t)info.vocab_size);
  cancelPrefill(model, info.vocab_size, ids,
                info.context_length > 0 && info.context_length < 1024
                    ? (size_t)info.context_length - 8
                    : 1024);

  /* Load from memory: the same ids. */
  buffer = readFile(modelPath, &bufferSize);
  CHECK_OK(fm_model_load_from_buffer(buffer, bufferSize, "buffer.fmb", NULL, &fromBuffer));
  free(buffer);
  {
    fm_session *s2 = NULL;
    CHECK_OK(fm_session_create(fromBuffer, &sessionParams, &s2));
    gp.max_new_tokens = 12;
    CHECK_OK(fm_session_generate_tokens(s2, prompt, n, greedy, &gp, &g));
    printIds("buffer", g.tokens, g.n_tokens);
    CHECK_OK(fm_session_free(s2));
  }
  CHECK_OK(fm_model_free(fromBuffer));

  /* Text: fm-run --prompt. */
  CHECK_OK(fm_session_reset(session));
  text = workFile(work, "prompt.txt", NULL);
  gp = fm_generate_params_default();
  gp.max_new_tokens = 12;
  memset(&stream, 0, sizeof(stream));
  gp.on_text = onText;
  gp.user_data = &stream;
  CHECK_OK(fm_session_generate_text(session, text, greedy, &gp, &g));
  printIds("text ids", g.tokens, g.n_tokens);
  printIds("text prompt", g.prompt, g.n_prompt);
  printText("text", g.text, g.text_size);
  printf("text streamed: %d stop %s\n",
         stream.size == g.text_size && memcmp(stream.text, g.text, g.text_size) == 0,
         g.stop_name);
  /* A stop string. */
  if (g.text_size >= 4) {
    char stop[3];
    memcpy(stop, g.text + g.text_size / 2, 2);
    stop[2] = '\0';
    stops[0] = stop;
    gp.stop_strings = stops;
    gp.n_stop_strings = 1;
    CHECK_OK(fm_session_reset(session));
    CHECK_OK(fm_session_generate_text(session, text, greedy, &gp, &g));
    printf("stop string: %s %d\n", g.stop_name,
           strstr(g.text, stop) == NULL && g.text_size <= stream.size);
    gp.stop_strings = NULL;
    gp.n_stop_strings = 0;
  }
  free(text);

  /* Tokenizer: fm-tokenize. */
  CHECK_OK(fm_model_tokenizer(model, &tokenizer));
  CHECK_OK(fm_tokenizer_info_get(tokenizer, &tinfo));
  printf("tokenizer: vocab %lld bos %d eos %d chat %d\n", (long long)tinfo.vocab_size,
         (int)tinfo.bos_id, (int)tinfo.eos_id, tinfo.has_chat_template);
  text = workFile(work, "text.txt", &size);
  EXPECT(fm_tokenizer_encode(tokenizer, text, size, 0, NULL, 0, &count),
         FM_STATUS_BUFFER_TOO_SMALL, "ids needs");
  if (count > 1024)
    count = 1024;
  CHECK_OK(fm_tokenizer_encode(tokenizer, text, size, 0, ids, count, &count));
  printIds("encode", ids, count);
  CHECK_OK(fm_tokenizer_decode(tokenizer, ids, count, 0, decoded, sizeof(decoded), &size));
  printf("decode round trip: %d\n", strcmp(decoded, text) == 0);
  free(text);
  {
    char path[4096];
    snprintf(path, sizeof(path), "%s/tokenizer", work);
    CHECK_OK(fm_tokenizer_open(path, &opened));
    CHECK_OK(fm_tokenizer_encode(opened, "Hello world", 11, 1, out, 64, &count));
    printIds("opened", out, count);
    CHECK_OK(fm_tokenizer_free(opened));
  }

  /* Chat template: encoded, the first turn's context of fm-run --chat. */
  text = workFile(work, "messages.json", NULL);
  CHECK_OK(fm_tokenizer_apply_chat_template(tokenizer, text, 1, rendered,
                                            sizeof(rendered), &size));
  CHECK_OK(fm_tokenizer_encode(tokenizer, rendered, size, 0, ids, 1024, &count));
  printIds("template", ids, count);
  free(text);

  /* Chat: fm-run --chat --system. */
  {
    char *turns = workFile(work, "chat.txt", NULL);
    char *turn = turns, *next;
    int k = 1;
    CHECK_OK(fm_session_chat_start(session, "You are terse.", NULL));
    gp = fm_generate_params_default();
    gp.max_new_tokens = 8;
    for (; turn; turn = next, ++k) {
      char name[64];
      next = strstr(turn, "\n---\n");
      if (next) {
        *next = '\0';
        next += 5;
      } else if (turn[strlen(turn) - 1] == '\n') {
        turn[strlen(turn) - 1] = '\0';
      }
      CHECK_OK(fm_session_chat_say(session, turn, greedy, &gp, &g));
      snprintf(name, sizeof(name), "chat %d ids", k);
      printIds(name, g.tokens, g.n_tokens);
      snprintf(name, sizeof(name), "chat %d context", k);
      printIds(name, g.context, g.n_context);
      printf("chat %d reused: %lld\n", k, (long long)g.reused_tokens);
    }
    free(turns);
  }

  /* Guided: fm-run --json-schema, --regex, --grammar, --tools. */
  text = workFile(work, "prompt.txt", NULL);
  cp.kind = FM_CONSTRAINT_JSON_SCHEMA;
  cp.source = workFile(work, "schema.json", NULL);
  CHECK_OK(fm_constraint_create(model, &cp, &schema));
  free((char *)cp.source);
  gp = fm_generate_params_default();
  gp.max_new_tokens = 60;
  gp.constraint = schema;
  CHECK_OK(fm_session_reset(session));
  CHECK_OK(fm_session_generate_text(session, text, greedy, &gp, &g));
  printIds("schema ids", g.tokens, g.n_tokens);
  printText("schema", g.constrained, strlen(g.constrained));
  printf("schema complete: %d %s\n", g.complete, g.stop_name);

  cp.kind = FM_CONSTRAINT_REGEX;
  cp.source = "[a-z]{3,8} (yes|no)";
  CHECK_OK(fm_constraint_create(model, &cp, &regex));
  gp.constraint = regex;
  CHECK_OK(fm_session_reset(session));
  CHECK_OK(fm_session_generate_text(session, text, greedy, &gp, &g));
  printIds("regex ids", g.tokens, g.n_tokens);
  printText("regex", g.constrained, strlen(g.constrained));

  cp.kind = FM_CONSTRAINT_GBNF;
  cp.source = workFile(work, "grammar.gbnf", NULL);
  CHECK_OK(fm_constraint_create(model, &cp, &gbnf));
  free((char *)cp.source);
  gp.constraint = gbnf;
  CHECK_OK(fm_session_reset(session));
  CHECK_OK(fm_session_generate_tokens(session, prompt, n, greedy, &gp, &g));
  printText("gbnf tokens", g.constrained, strlen(g.constrained));

  cp.kind = FM_CONSTRAINT_TOOLS;
  cp.source = workFile(work, "tools.json", NULL);
  cp.tool_choice = "required";
  CHECK_OK(fm_constraint_create(model, &cp, &tools));
  free((char *)cp.source);
  gp.constraint = tools;
  CHECK_OK(fm_session_reset(session));
  CHECK_OK(fm_session_generate_text(session, text, greedy, &gp, &g));
  printText("tools", g.constrained, strlen(g.constrained));
  printf("tools call: %d complete %d\n", g.is_tool_call, g.complete);
  free(text);

  /* Perplexity: fm-run --perplexity --ctx 16 --kl-base. */
  CHECK_OK(fm_session_create(model, &sessionParams, &base));
  text = workFile(work, "text.txt", NULL);
  pp.ctx = 16;
  CHECK_OK(fm_session_perplexity_text(session, text, &pp, base, &pr));
  printf("ppl: %.17g %.17g %lld %lld kl %.17g top1 %.17g\n", pr.ppl, pr.ppl_error,
         (long long)pr.tokens_scored, (long long)pr.chunks, pr.kl_mean, pr.top1_agree);
  CHECK_OK(fm_tokenizer_encode(tokenizer, text, strlen(text), 0, ids, 1024, &count));
  pp.bos = -1;
  CHECK_OK(fm_session_perplexity(session, ids, count, &pp, NULL, &pr));
  printf("ppl ids: %.17g\n", pr.ppl);
  free(text);

  /* A LoRA adapter at scale 0.5: fm-run --adapter a.fmba:0.5. */
  {
    char path[4096];
    snprintf(path, sizeof(path), "%s/adapter.fmba", work);
    CHECK_OK(fm_adapter_load(model, path, &adapter));
    buffer = readFile(path, &bufferSize);
    CHECK_OK(fm_adapter_load_from_buffer(model, buffer, bufferSize, "buffer.fmba",
                                         &adapterFromBuffer));
    free(buffer);
  }
  attach[0] = adapter;
  gp = fm_generate_params_default();
  gp.max_new_tokens = 12;
  CHECK_OK(fm_session_set_adapters(session, attach, &scale, 1));
  CHECK_OK(fm_session_reset(session));
  CHECK_OK(fm_session_generate_tokens(session, prompt, n, greedy, &gp, &g));
  printIds("adapter", g.tokens, g.n_tokens);
  attach[0] = adapterFromBuffer;
  CHECK_OK(fm_session_set_adapters(session, attach, &scale, 1));
  CHECK_OK(fm_session_reset(session));
  CHECK_OK(fm_session_generate_tokens(session, prompt, n, greedy, &gp, &g));
  printIds("adapter buffer", g.tokens, g.n_tokens);
  CHECK_OK(fm_session_set_adapters(session, NULL, NULL, 0));
  CHECK_OK(fm_session_reset(session));
  CHECK_OK(fm_session_generate_tokens(session, prompt, n, greedy, &gp, &g));
  printIds("detached", g.tokens, g.n_tokens);

  CHECK_OK(fm_session_stats_json(session, &json));
  printf("stats: %s\n", json);
  printf("errors: [%s] [%s] [%s] [%s] [%s]\n", fm_session_error(base),
         fm_sampler_error(greedy), fm_tokenizer_error(tokenizer),
         fm_constraint_error(schema), fm_adapter_error(adapter));

  speculative(model, work, prompt, n, greedy, &sp);

  /* The model may go first: its sessions keep it alive. */
  CHECK_OK(fm_model_free(model));
  CHECK_OK(fm_session_reset(session));
  CHECK_OK(fm_session_generate_tokens(session, prompt, n, greedy, &gp, &g));
  printIds("after model free", g.tokens, g.n_tokens);

  CHECK_OK(fm_adapter_free(adapter));
  CHECK_OK(fm_adapter_free(adapterFromBuffer));
  CHECK_OK(fm_constraint_free(schema));
  CHECK_OK(fm_constraint_free(regex));
  CHECK_OK(fm_constraint_free(gbnf));
  CHECK_OK(fm_constraint_free(tools));
  CHECK_OK(fm_tokenizer_free(tokenizer));
  CHECK_OK(fm_sampler_free(greedy));
  CHECK_OK(fm_sampler_free(sampled));
  CHECK_OK(fm_session_free(base));
  CHECK_OK(fm_session_free(session));
  return 0;
}

/* Every function, called wrong: a code and a message, never a crash. */
/* Two kernels for the static registry's checks (never called). */
static void kernelA(void **args, int64_t rows, int64_t pos) {
  (void)args;
  (void)rows;
  (void)pos;
}
static void kernelB(void **args, int64_t rows, int64_t pos) {
  (void)args;
  (void)rows;
  (void)pos;
}

static int misuse(const char *modelPath, const char *work) {
  fm_model *model = NULL, *notModel;
  fm_session *session = NULL, *freed = NULL;
  fm_sampler *sampler = NULL;
  fm_tokenizer *tokenizer = NULL;
  fm_constraint *constraint = NULL;
  fm_adapter *adapter = NULL;
  fm_load_params lp = fm_load_params_default();
  fm_model_info info = fm_model_info_default();
  fm_session_params sp = fm_session_params_default();
  fm_sampler_params smp = fm_sampler_params_default();
  fm_generate_params gp = fm_generate_params_default();
  fm_generation g = fm_generation_default();
  fm_constraint_params cp = fm_constraint_params_default();
  fm_perplexity_params pp = fm_perplexity_params_default();
  fm_perplexity_result pr = fm_perplexity_result_default();
  fm_tokenizer_info ti = fm_tokenizer_info_default();
  fm_device_info di = fm_device_info_default();
  int32_t token = 1, ids[8];
  size_t n;
  int64_t position;
  const float *logits;
  const int32_t *context;
  char text[64], path[4096];
  float scale = 1.0f;
  const fm_adapter *attach[1];
  const char *badKey = "not a key";

  /* Loading. */
  EXPECT(fm_model_load(NULL, NULL, &model), FM_STATUS_INVALID_ARGUMENT,
         "fm_model_load: path is NULL");
  EXPECT(fm_model_load(modelPath, NULL, NULL), FM_STATUS_INVALID_ARGUMENT,
         "fm_model_load: model is NULL");
  lp.struct_size = sizeof(lp) - 1;
  EXPECT(fm_model_load(modelPath, &lp, &model), FM_STATUS_INVALID_ARGUMENT,
         "params->struct_size is");
  lp = fm_load_params_default();
  lp.n_trusted_keys = 1;
  EXPECT(fm_model_load(modelPath, &lp, &model), FM_STATUS_INVALID_ARGUMENT,
         "params->trusted_keys is NULL");
  lp.trusted_keys = &badKey;
  EXPECT(fm_model_load(modelPath, &lp, &model), FM_STATUS_LOAD_FAILED, "key");
  lp = fm_load_params_default();
  lp.max_memory_bytes = 1024;
  EXPECT(fm_model_load(modelPath, &lp, &model), FM_STATUS_LOAD_FAILED, "memory");
  lp = fm_load_params_default();
  lp.device = "nosuchdevice";
  EXPECT(fm_model_load(modelPath, &lp, &model), FM_STATUS_LOAD_FAILED, "nosuchdevice");
  snprintf(path, sizeof(path), "%s/missing.fmb", work);
  EXPECT(fm_model_load(path, NULL, &model), FM_STATUS_LOAD_FAILED, "missing.fmb");
  snprintf(path, sizeof(path), "%s/text.txt", work);
  EXPECT(fm_model_load(path, NULL, &model), FM_STATUS_LOAD_FAILED, "text.txt");
  snprintf(path, sizeof(path), "%s/truncated.fmb", work);
  EXPECT(fm_model_load(path, NULL, &model), FM_STATUS_LOAD_FAILED, "truncated.fmb");
  EXPECT(fm_model_load_from_buffer(NULL, 10, "x", NULL, &model),
         FM_STATUS_INVALID_ARGUMENT, "data is NULL");
  EXPECT(fm_model_load_from_buffer("garbage", 7, "garbage.fmb", NULL, &model),
         FM_STATUS_LOAD_FAILED, "garbage.fmb");
  EXPECT(fm_model_load_from_buffer("garbage", 7, NULL, NULL, NULL),
         FM_STATUS_INVALID_ARGUMENT, "model is NULL");
  EXPECT(fm_device_count(NULL), FM_STATUS_INVALID_ARGUMENT, "count is NULL");
  EXPECT(fm_device_get(1000, &di), FM_STATUS_INVALID_ARGUMENT, "index 1000 is out of range");
  EXPECT(fm_device_get(0, NULL), FM_STATUS_INVALID_ARGUMENT, "info is NULL");
  di.struct_size = 3;
  EXPECT(fm_device_get(0, &di), FM_STATUS_INVALID_ARGUMENT, "info->struct_size is 3");

  CHECK_OK(fm_model_load(modelPath, NULL, &model));
  EXPECT(fm_model_info_get(model, NULL), FM_STATUS_INVALID_ARGUMENT, "info is NULL");
  info.struct_size = 0;
  EXPECT(fm_model_info_get(model, &info), FM_STATUS_INVALID_ARGUMENT,
         "info->struct_size is 0");
  if (!strstr(fm_model_error(model), "info->struct_size is 0")) {
    ++failures;
    fprintf(stderr, "FAIL: the model's own message: [%s]\n", fm_model_error(model));
  }
  ++checks;
  EXPECT(fm_model_info_get(NULL, &info), FM_STATUS_INVALID_ARGUMENT, "model is NULL");

  /* Sessions. */
  EXPECT(fm_session_create(NULL, NULL, &session), FM_STATUS_INVALID_ARGUMENT,
         "model is NULL");
  EXPECT(fm_session_create(model, NULL, NULL), FM_STATUS_INVALID_ARGUMENT,
         "session is NULL");
  sp.threads = -1;
  EXPECT(fm_session_create(model, &sp, &session), FM_STATUS_INVALID_ARGUMENT,
         "params->threads -1");
  sp = fm_session_params_default();
  sp.activations = "int3";
  EXPECT(fm_session_create(model, &sp, &session), FM_STATUS_INVALID_ARGUMENT,
         "params->activations 'int3'");
  sp = fm_session_params_default();
  sp.struct_size = 1;
  EXPECT(fm_session_create(model, &sp, &session), FM_STATUS_INVALID_ARGUMENT,
         "params->struct_size is 1");
  /* A handle of another kind is no model. */
  CHECK_OK(fm_sampler_create(NULL, &sampler));
  notModel = (fm_model *)(void *)sampler;
  EXPECT(fm_session_create(notModel, NULL, &session), FM_STATUS_INVALID_HANDLE,
         "model is not a live fm_model");
  CHECK_OK(fm_session_create(model, NULL, &session));

  EXPECT(fm_session_prefill(session, NULL, 1, 0, &logits), FM_STATUS_INVALID_ARGUMENT,
         "tokens is NULL");
  EXPECT(fm_session_prefill(session, &token, 0, 0, &logits), FM_STATUS_INVALID_ARGUMENT,
         "n is 0");
  token = 999999;
  EXPECT(fm_session_prefill(session, &token, 1, 0, &logits), FM_STATUS_ERROR, "999999");
  if (!strstr(fm_session_error(session), "fm_session_prefill:") ||
      !strstr(fm_session_error(session), "999999")) {
    ++failures;
    fprintf(stderr, "FAIL: the session's own message: [%s]\n", fm_session_error(session));
  }
  ++checks;
  EXPECT(fm_session_decode(session, -5, &logits), FM_STATUS_ERROR, "-5");
  EXPECT(fm_session_decode(NULL, 1, &logits), FM_STATUS_INVALID_ARGUMENT, "session is NULL");
  token = 1;
  CHECK_OK(fm_session_prefill(session, &token, 1, 0, &logits));
  EXPECT(fm_session_sample(session, NULL, logits, &token), FM_STATUS_INVALID_ARGUMENT,
         "sampler is NULL");
  EXPECT(fm_session_sample(session, sampler, NULL, &token), FM_STATUS_INVALID_ARGUMENT,
         "logits is NULL");
  EXPECT(fm_session_sample(session, sampler, logits, NULL), FM_STATUS_INVALID_ARGUMENT,
         "token is NULL");
  EXPECT(fm_session_keep_prefix(session, 5), FM_STATUS_INVALID_ARGUMENT,
         "n 5: must be in [0, 1]");
  EXPECT(fm_session_position(session, NULL), FM_STATUS_INVALID_ARGUMENT, "position is NULL");
  EXPECT(fm_session_tokens(session, NULL, &n), FM_STATUS_INVALID_ARGUMENT, "tokens is NULL");
  EXPECT(fm_session_tokens(session, &context, NULL), FM_STATUS_INVALID_ARGUMENT, "n is NULL");
  EXPECT(fm_session_stats_json(session, NULL), FM_STATUS_INVALID_ARGUMENT, "json is NULL");
  EXPECT(fm_session_reset(NULL), FM_STATUS_INVALID_ARGUMENT, "session is NULL");
  EXPECT(fm_session_cancel(NULL), FM_STATUS_INVALID_ARGUMENT, "session is NULL");

  /* Samplers. */
  smp.temperature = -1.0f;
  EXPECT(fm_sampler_create(&smp, &sampler), FM_STATUS_INVALID_ARGUMENT,
         "params->temperature");
  smp = fm_sampler_params_default();
  smp.top_p = 0.0f;
  EXPECT(fm_sampler_create(&smp, &sampler), FM_STATUS_INVALID_ARGUMENT, "params->top_p");
  smp = fm_sampler_params_default();
  smp.top_k = -2;
  EXPECT(fm_sampler_create(&smp, &sampler), FM_STATUS_INVALID_ARGUMENT, "params->top_k -2");
  EXPECT(fm_sampler_create(NULL, NULL), FM_STATUS_INVALID_ARGUMENT, "sampler is NULL");

  /* Generation. */
  EXPECT(fm_session_generate_tokens(session, &token, 1, sampler, &gp, NULL),
         FM_STATUS_INVALID_ARGUMENT, "result is NULL");
  g.struct_size = 8;
  EXPECT(fm_session_generate_tokens(session, &token, 1, sampler, &gp, &g),
         FM_STATUS_INVALID_ARGUMENT, "result->struct_size is 8");
  g = fm_generation_default();
  gp.max_new_tokens = -1;
  EXPECT(fm_session_generate_tokens(session, &token, 1, sampler, &gp, &g),
         FM_STATUS_INVALID_ARGUMENT, "params->max_new_tokens -1");
  gp = fm_generate_params_default();
  gp.n_stop_strings = 2;
  EXPECT(fm_session_generate_text(session, "hi", sampler, &gp, &g),
         FM_STATUS_INVALID_ARGUMENT, "params->stop_strings is NULL");
  gp = fm_generate_params_default();
  EXPECT(fm_session_generate_tokens(session, NULL, 1, sampler, &gp, &g),
         FM_STATUS_INVALID_ARGUMENT, "prompt is NULL");
  EXPECT(fm_session_generate_text(session, NULL, sampler, &gp, &g),
         FM_STATUS_INVALID_ARGUMENT, "prompt is NULL");
  EXPECT(fm_session_generate_text(session, "hi", NULL, &gp, &g),
         FM_STATUS_INVALID_ARGUMENT, "sampler is NULL");
  EXPECT(fm_session_chat_say(session, "hi", sampler, &gp, &g), FM_STATUS_INVALID_ARGUMENT,
         "call fm_session_chat_start first");
  CHECK_OK(fm_session_chat_start(session, NULL, NULL));
  EXPECT(fm_session_chat_say(session, NULL, sampler, &gp, &g), FM_STATUS_INVALID_ARGUMENT,
         "user is NULL");
  EXPECT(fm_session_chat_start(NULL, NULL, NULL), FM_STATUS_INVALID_ARGUMENT,
         "session is NULL");
  /* A cancel before a generation stops it at its start. */
  CHECK_OK(fm_session_cancel(session));
  EXPECT(fm_session_generate_tokens(session, &token, 1, sampler, &gp, &g),
         FM_STATUS_CANCELLED, "cancelled by fm_session_cancel");
  CHECK_OK(fm_session_reset(session));
  CHECK_OK(fm_session_generate_tokens(session, &token, 1, sampler, &gp, &g));
  /* ... and a prefill at its start. */
  CHECK_OK(fm_session_cancel(session));
  EXPECT(fm_session_prefill(session, &token, 1, 0, NULL), FM_STATUS_CANCELLED,
         "cancelled by fm_session_cancel before the prefill started");
  CHECK_OK(fm_session_prefill(session, &token, 1, 0, NULL));

  /* Statically linked kernels: the registry's checks. */
  {
    const char *names[1] = {"fmk_0123456789abcdef_k0_entry"};
    fm_kernel_function fns[1] = {kernelA}, others[1] = {kernelB};
    EXPECT((fm_status)fm_static_kernels_register(NULL, names, fns, 1),
           FM_STATUS_INVALID_ARGUMENT, "key is NULL");
    EXPECT((fm_status)fm_static_kernels_register("0123456789abcdef", NULL, fns, 1),
           FM_STATUS_INVALID_ARGUMENT, "names is NULL");
    EXPECT((fm_status)fm_static_kernels_register("0123456789abcdef", names, NULL, 1),
           FM_STATUS_INVALID_ARGUMENT, "functions is NULL");
    EXPECT((fm_status)fm_static_kernels_register("xyz", names, fns, 1),
           FM_STATUS_INVALID_ARGUMENT, "key 'xyz' is not fmc's (16 lower-case hex digits)");
    CHECK_OK((fm_status)fm_static_kernels_register("0123456789abcdef", names, fns, 1));
    CHECK_OK((fm_status)fm_static_kernels_register("0123456789abcdef", names, fns, 1));
    EXPECT((fm_status)fm_static_kernels_register("0123456789abcdef", names, others, 1),
           FM_STATUS_INVALID_ARGUMENT, "registered twice with different functions");
  }

  /* Speculative decoding's settings. */
  {
    fm_speculative_params spec = fm_speculative_params_default();
    fm_model *notok = NULL;
    fm_session *draft = NULL, *notokDraft = NULL;
    EXPECT(fm_session_set_speculative(NULL, &spec), FM_STATUS_INVALID_ARGUMENT,
           "session is NULL");
    spec.struct_size = 3;
    EXPECT(fm_session_set_speculative(session, &spec), FM_STATUS_INVALID_ARGUMENT,
           "params->struct_size is 3");
    spec = fm_speculative_params_default();
    spec.draft_max = 0;
    EXPECT(fm_session_set_speculative(session, &spec), FM_STATUS_INVALID_ARGUMENT,
           "params->draft_max 0: must be >= 1");
    spec = fm_speculative_params_default();
    spec.draft_min = 5;
    EXPECT(fm_session_set_speculative(session, &spec), FM_STATUS_INVALID_ARGUMENT,
           "params->draft_min 5: must be in [0, draft_max 4]");
    spec = fm_speculative_params_default();
    spec.draft_p_min = 2.0f;
    EXPECT(fm_session_set_speculative(session, &spec), FM_STATUS_INVALID_ARGUMENT,
           "params->draft_p_min");
    spec = fm_speculative_params_default();
    spec.lookup_ngram = 0;
    EXPECT(fm_session_set_speculative(session, &spec), FM_STATUS_INVALID_ARGUMENT,
           "params->lookup_ngram 0: must be >= 1");
    spec = fm_speculative_params_default();
    spec.draft = session;
    EXPECT(fm_session_set_speculative(session, &spec), FM_STATUS_INVALID_ARGUMENT,
           "params->draft is the session itself");
    spec.draft = (fm_session *)(void *)sampler;
    EXPECT(fm_session_set_speculative(session, &spec), FM_STATUS_INVALID_HANDLE,
           "params->draft");
    spec.draft = NULL;
    spec.draft_sampler = (const fm_sampler *)(void *)session;
    EXPECT(fm_session_set_speculative(session, &spec), FM_STATUS_INVALID_HANDLE,
           "params->draft_sampler");
    /* A draft that does not tokenize as the model does: both files named. */
    snprintf(path, sizeof(path), "%s/notok.fmb", work);
    CHECK_OK(fm_model_load(path, NULL, &notok));
    CHECK_OK(fm_session_create(notok, NULL, &notokDraft));
    spec = fm_speculative_params_default();
    spec.draft = notokDraft;
    EXPECT(fm_session_set_speculative(session, &spec), FM_STATUS_INVALID_ARGUMENT,
           "notok.fmb embeds no tokenizer");
    CHECK_OK(fm_session_free(notokDraft));
    CHECK_OK(fm_model_free(notok));
    /* A draft freed after it was set: the generation says so. */
    CHECK_OK(fm_session_create(model, NULL, &draft));
    spec.draft = draft;
    CHECK_OK(fm_session_set_speculative(session, &spec));
    CHECK_OK(fm_session_free(draft));
    CHECK_OK(fm_session_reset(session));
    EXPECT(fm_session_generate_tokens(session, &token, 1, sampler, &gp, &g),
           FM_STATUS_INVALID_HANDLE, "the draft session (fm_session_set_speculative)");
    CHECK_OK(fm_session_set_speculative(session, NULL));
    CHECK_OK(fm_session_generate_tokens(session, &token, 1, sampler, &gp, &g));
  }

  /* Perplexity. */
  EXPECT(fm_session_perplexity(session, ids, 2, &pp, NULL, NULL),
         FM_STATUS_INVALID_ARGUMENT, "result is NULL");
  ids[0] = ids[1] = 1;
  EXPECT(fm_session_perplexity(session, ids, 2, &pp, NULL, &pr), FM_STATUS_ERROR,
         "fewer");
  pp.ctx = 2;
  EXPECT(fm_session_perplexity(session, ids, 2, &pp, NULL, &pr), FM_STATUS_ERROR, "ctx");
  pp = fm_perplexity_params_default();
  EXPECT(fm_session_perplexity(session, ids, 2, &pp, session, &pr), FM_STATUS_ERROR,
         "the KL base must be another session");
  EXPECT(fm_session_perplexity_text(session, NULL, &pp, NULL, &pr),
         FM_STATUS_INVALID_ARGUMENT, "text is NULL");
  pp.struct_size = 0;
  EXPECT(fm_session_perplexity_text(session, "x", &pp, NULL, &pr),
         FM_STATUS_INVALID_ARGUMENT, "params->struct_size is 0");

  /* Tokenizers. */
  EXPECT(fm_model_tokenizer(model, NULL), FM_STATUS_INVALID_ARGUMENT, "tokenizer is NULL");
  EXPECT(fm_tokenizer_open(NULL, &tokenizer), FM_STATUS_INVALID_ARGUMENT, "path is NULL");
  snprintf(path, sizeof(path), "%s/missing.json", work);
  EXPECT(fm_tokenizer_open(path, &tokenizer), FM_STATUS_LOAD_FAILED, "missing.json");
  CHECK_OK(fm_model_tokenizer(model, &tokenizer));
  EXPECT(fm_tokenizer_encode(tokenizer, NULL, 3, 0, ids, 8, &n), FM_STATUS_INVALID_ARGUMENT,
         "text is NULL");
  EXPECT(fm_tokenizer_encode(tokenizer, "hi", 2, 0, ids, 8, NULL),
         FM_STATUS_INVALID_ARGUMENT, "n is NULL");
  ids[0] = 99999;
  EXPECT(fm_tokenizer_decode(tokenizer, ids, 1, 0, text, sizeof(text), &n), FM_STATUS_ERROR,
         "99999");
  ids[0] = 72;
  EXPECT(fm_tokenizer_decode(tokenizer, ids, 1, 0, text, 1, &n), FM_STATUS_BUFFER_TOO_SMALL,
         "text needs");
  EXPECT(fm_tokenizer_decode(tokenizer, ids, 1, 0, text, sizeof(text), NULL),
         FM_STATUS_INVALID_ARGUMENT, "size is NULL");
  EXPECT(fm_tokenizer_apply_chat_template(tokenizer, NULL, 1, text, sizeof(text), &n),
         FM_STATUS_INVALID_ARGUMENT, "messages_json is NULL");
  EXPECT(fm_tokenizer_apply_chat_template(tokenizer, "[{\"role\": ", 1, text, sizeof(text),
                                          &n),
         FM_STATUS_ERROR, "messages_json");
  if (!strstr(fm_tokenizer_error(tokenizer), "messages_json")) {
    ++failures;
    fprintf(stderr, "FAIL: the tokenizer's own message: [%s]\n", fm_tokenizer_error(tokenizer));
  }
  ++checks;
  ti.struct_size = 2;
  EXPECT(fm_tokenizer_info_get(tokenizer, &ti), FM_STATUS_INVALID_ARGUMENT,
         "info->struct_size is 2");

  /* Constraints. */
  EXPECT(fm_constraint_create(model, NULL, &constraint), FM_STATUS_INVALID_ARGUMENT,
         "params is NULL");
  EXPECT(fm_constraint_create(model, &cp, &constraint), FM_STATUS_INVALID_ARGUMENT,
         "params->source is NULL");
  cp.source = "{\"type\": \"nosuchtype\"}";
  EXPECT(fm_constraint_create(model, &cp, &constraint), FM_STATUS_ERROR,
         "params->source: ");
  cp.kind = FM_CONSTRAINT_GBNF;
  cp.source = "root ::= (";
  EXPECT(fm_constraint_create(model, &cp, &constraint), FM_STATUS_ERROR, "params->source");
  cp.kind = FM_CONSTRAINT_TOOLS;
  cp.source = "[]";
  cp.tool_choice = "sometimes";
  EXPECT(fm_constraint_create(model, &cp, &constraint), FM_STATUS_INVALID_ARGUMENT,
         "params->tool_choice 'sometimes'");
  cp.kind = (fm_constraint_kind)42;
  EXPECT(fm_constraint_create(model, &cp, &constraint), FM_STATUS_INVALID_ARGUMENT,
         "params->kind 42");

  /* Adapters. */
  EXPECT(fm_adapter_load(model, NULL, &adapter), FM_STATUS_INVALID_ARGUMENT, "path is NULL");
  snprintf(path, sizeof(path), "%s/text.txt", work);
  EXPECT(fm_adapter_load(model, path, &adapter), FM_STATUS_LOAD_FAILED, "text.txt");
  EXPECT(fm_adapter_load_from_buffer(model, "xx", 2, "bad.fmba", &adapter),
         FM_STATUS_LOAD_FAILED, "bad.fmba");
  EXPECT(fm_session_set_adapters(session, NULL, &scale, 1), FM_STATUS_INVALID_ARGUMENT,
         "adapters is NULL");
  attach[0] = (const fm_adapter *)(const void *)tokenizer;
  EXPECT(fm_session_set_adapters(session, attach, &scale, 1), FM_STATUS_INVALID_HANDLE,
         "adapters[0] is not a live fm_adapter");

  /* Images: this model has no image encoder. */
  EXPECT(fm_session_add_image_file(session, NULL, NULL, NULL, NULL), FM_STATUS_INVALID_ARGUMENT,
         "path is NULL");
  EXPECT(fm_session_add_image_file(session, "x.png", NULL, NULL, NULL), FM_STATUS_UNSUPPORTED,
         "has no image encoder");
  EXPECT(fm_session_add_image_tensor(session, NULL, 3, NULL, NULL, NULL),
         FM_STATUS_INVALID_ARGUMENT, "tensor is NULL");
  EXPECT(fm_session_add_image_tensor(session, &scale, 1, NULL, NULL, NULL),
         FM_STATUS_UNSUPPORTED, "has no image encoder");

  /* Freed twice, and used after the free: reported, never a crash. */
  CHECK_OK(fm_session_create(model, NULL, &freed));
  CHECK_OK(fm_session_free(freed));
  EXPECT(fm_session_free(freed), FM_STATUS_INVALID_HANDLE,
         "fm_session_free: session is not a live fm_session (freed already");
  EXPECT(fm_session_position(freed, &position), FM_STATUS_INVALID_HANDLE,
         "session is not a live fm_session");
  EXPECT(fm_session_generate_tokens(freed, &token, 1, sampler, &gp, &g),
         FM_STATUS_INVALID_HANDLE, "session is not a live fm_session");
  if (!strstr(fm_session_error(freed), "not a live fm_session")) {
    ++failures;
    fprintf(stderr, "FAIL: a freed session's message: [%s]\n", fm_session_error(freed));
  }
  ++checks;
  CHECK_OK(fm_session_free(NULL));
  CHECK_OK(fm_tokenizer_free(tokenizer));
  EXPECT(fm_tokenizer_free(tokenizer), FM_STATUS_INVALID_HANDLE, "not a live fm_tokenizer");
  EXPECT(fm_tokenizer_encode(tokenizer, "hi", 2, 0, ids, 8, &n), FM_STATUS_INVALID_HANDLE,
         "tokenizer is not a live fm_tokenizer");
  CHECK_OK(fm_sampler_free(sampler));
  EXPECT(fm_sampler_free(sampler), FM_STATUS_INVALID_HANDLE, "not a live fm_sampler");
  EXPECT(fm_constraint_free((fm_constraint *)(void *)session), FM_STATUS_INVALID_HANDLE,
         "not a live fm_constraint");
  EXPECT(fm_adapter_free((fm_adapter *)(void *)session), FM_STATUS_INVALID_HANDLE,
         "not a live fm_adapter");
  CHECK_OK(fm_session_free(session));
  CHECK_OK(fm_model_free(model));
  EXPECT(fm_model_free(model), FM_STATUS_INVALID_HANDLE, "not a live fm_model");
  EXPECT(fm_model_info_get(model, &info), FM_STATUS_INVALID_HANDLE, "not a live fm_model");
  if (strcmp(fm_status_name((fm_status)77), "FM_STATUS_UNKNOWN") != 0)
    ++failures;
  ++checks;

  printf("misuse: %d checks, %d failed\n", checks, failures);
  return failures ? 1 : 0;
}

/* A VLM: an image from a file, then one from a tensor, each taken by the
 * placeholders of a prompt of ids (fm-run --tokens P --image F /
 * --image-tensor F.npy). */
static int vlm(const char *modelPath, const char *work) {
  fm_model *model = NULL;
  fm_session *session = NULL;
  fm_sampler *greedy = NULL;
  fm_model_info info = fm_model_info_default();
  fm_generate_params gp = fm_generate_params_default();
  fm_generation g = fm_generation_default();
  int32_t prompt[512];
  size_t n = 0, size;
  int64_t i, rows = 0, width = 0;
  const float *tokens = NULL;
  const float few[3] = {0.0f, 0.0f, 0.0f};
  char path[4096];
  char *tensor;

  CHECK_OK(fm_model_load(modelPath, NULL, &model));
  CHECK_OK(fm_model_info_get(model, &info));
  CHECK_OK(fm_session_create(model, NULL, &session));
  CHECK_OK(fm_sampler_create(NULL, &greedy));
  prompt[n++] = 1;
  prompt[n++] = 2;
  for (i = 0; i < info.image_tokens && n < 500; ++i)
    prompt[n++] = (int32_t)info.image_token_id;
  prompt[n++] = 4;
  prompt[n++] = 5;
  printIds("vlm prompt", prompt, n);
  gp.max_new_tokens = 8;

  snprintf(path, sizeof(path), "%s/image.png", work);
  CHECK_OK(fm_session_add_image_file(session, path, &tokens, &rows, &width));
  printf("vlm image tokens: %lld x %lld %d\n", (long long)rows, (long long)width,
         tokens != NULL);
  CHECK_OK(fm_session_generate_tokens(session, prompt, n, greedy, &gp, &g));
  printIds("vlm file", g.tokens, g.n_tokens);

  tensor = workFile(work, "image.f32", &size);
  CHECK_OK(fm_session_reset(session));
  CHECK_OK(fm_session_add_image_tensor(session, (const float *)(void *)tensor,
                                       size / sizeof(float), NULL, NULL, NULL));
  free(tensor);
  CHECK_OK(fm_session_generate_tokens(session, prompt, n, greedy, &gp, &g));
  printIds("vlm tensor", g.tokens, g.n_tokens);

  /* The wrong size of tensor, and a file that is no image. */
  EXPECT(fm_session_add_image_tensor(session, few, 3, NULL, NULL, NULL), FM_STATUS_ERROR,
         "got 3 floats");
  snprintf(path, sizeof(path), "%s/prompt_ids.txt", work);
  EXPECT(fm_session_add_image_file(session, path, NULL, NULL, NULL), FM_STATUS_LOAD_FAILED,
         "prompt_ids.txt");

  /* Text: the prompt's <image> marker takes the image added before it. */
  CHECK_OK(fm_session_reset(session));
  snprintf(path, sizeof(path), "%s/image.png", work);
  CHECK_OK(fm_session_add_image_file(session, path, NULL, NULL, NULL));
  CHECK_OK(fm_session_generate_text(session, "Look: <image> then", greedy, &gp, &g));
  printIds("vlm text", g.tokens, g.n_tokens);
  printIds("vlm text prompt", g.prompt, g.n_prompt);
  /* Markers and images must match in number. */
  CHECK_OK(fm_session_reset(session));
  EXPECT(fm_session_generate_text(session, "two: <image> <image>", greedy, &gp, &g),
         FM_STATUS_INVALID_ARGUMENT,
         "holds 2 <image> markers but 0 image (fm_session_add_image_*) were given");

  /* A chat: the image waits for the user turn's marker. */
  CHECK_OK(fm_session_chat_start(session, NULL, NULL));
  CHECK_OK(fm_session_add_image_file(session, path, &tokens, &rows, &width));
  printf("vlm chat image tokens: %lld x %lld %d\n", (long long)rows, (long long)width,
         tokens != NULL);
  CHECK_OK(fm_session_chat_say(session, "What is in <image>?", greedy, &gp, &g));
  printIds("vlm chat 1", g.tokens, g.n_tokens);
  printIds("vlm chat 1 context", g.context, g.n_context);
  CHECK_OK(fm_session_chat_say(session, "And then?", greedy, &gp, &g));
  printIds("vlm chat 2", g.tokens, g.n_tokens);
  printIds("vlm chat 2 context", g.context, g.n_context);
  printf("vlm misuse: %d checks, %d failed\n", checks, failures);

  CHECK_OK(fm_sampler_free(greedy));
  CHECK_OK(fm_session_free(session));
  CHECK_OK(fm_model_free(model));
  return failures ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc == 4 && strcmp(argv[1], "run") == 0)
    return run(argv[2], argv[3]);
  if (argc == 4 && strcmp(argv[1], "misuse") == 0)
    return misuse(argv[2], argv[3]);
  if (argc == 4 && strcmp(argv[1], "vlm") == 0)
    return vlm(argv[2], argv[3]);
  fprintf(stderr, "usage: %s run|misuse|vlm MODEL.fmb WORK\n", argv[0]);
  return 2;
}
