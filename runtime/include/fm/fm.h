/* fm.h: the fm runtime's C API (C99): load a compiled .fmb model and run it
 * from any language that calls C (Swift, Kotlin, Python's ctypes, C, C++).
 *
 *   fm_model *model;
 *   if (fm_model_load("model.fmb", NULL, &model) != FM_STATUS_OK) {
 *     fprintf(stderr, "%s\n", fm_last_error());
 *     return 1;
 *   }
 *   fm_session *session;
 *   fm_session_create(model, NULL, &session);
 *   ...
 *   fm_session_free(session);
 *   fm_model_free(model);
 *
 * docs/embedding.md has a complete program, the CMake and pkg-config lines
 * and a Python snippet.
 *
 * Errors. Every function but the few that cannot fail (fm_version,
 * fm_abi_version, fm_status_name, the *_error and *_params_default
 * functions) returns an fm_status. On failure a readable sentence says what
 * is wrong, naming the argument or the file ("fm_model_load: path is NULL",
 * "model.fmb: not an .fmb artifact (file identifier ...)"):
 *   - fm_last_error(): the calling thread's last failure, whatever the call;
 *     for the calls that fail before a handle exists (load, create);
 *   - fm_session_error(s), fm_model_error(m), ...: the last failure of a
 *     call on that handle.
 * A failed call leaves its outputs as they were, unless said otherwise. No
 * C++ exception and no abort() crosses this API.
 *
 * Handles. Every handle is opaque and made by one function and freed by its
 * *_free. A handle this library did not make, or one already freed, is
 * refused with FM_STATUS_INVALID_HANDLE (the library keeps the set of live
 * handles): a double free is reported, never a crash. (A freed handle's
 * address may be reused by a later handle; a stale pointer then reaches the
 * new one. Set your pointers to NULL after a free.) fm_*_free(NULL) is a
 * no-op that returns FM_STATUS_OK.
 *
 * Parameter structs. Each has struct_size as its first field and an
 * initializer, e.g. fm_load_params_default(), which sets it: start from the
 * initializer and change the fields you need. A struct_size this library
 * does not know is refused with FM_STATUS_INVALID_ARGUMENT, so that the
 * structs can grow without breaking the ABI. Where a params pointer may be
 * NULL, NULL means the defaults.
 *
 * Thread contract.
 *   - A model (fm_model) is immutable once loaded: any number of threads may
 *     use it at once (fm_model_info, fm_session_create, fm_model_tokenizer,
 *     fm_adapter_load, fm_constraint_create), and any number of sessions
 *     share it. Sessions, adapters, tokenizers and constraints keep their
 *     model alive: fm_model_free may come before theirs.
 *   - A tokenizer, an adapter and a constraint are immutable too and may be
 *     used by any number of threads at once.
 *   - A session (fm_session) and a sampler (fm_sampler) are used by one
 *     thread at a time. The one exception is fm_session_cancel, which any
 *     thread may call at any time while another thread runs the session.
 *   - Callbacks run on the thread that called the generating function.
 *   - Strings and arrays a session hands out (logits, results, JSON) stay
 *     valid until that session's next call (other than fm_session_cancel
 *     and fm_session_error).
 *   - fm_last_error() is per thread.
 */
#ifndef FM_FM_H
#define FM_FM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define FM_API __declspec(dllexport)
#else
#define FM_API __attribute__((visibility("default")))
#endif

/* The ABI this header describes: it changes when a function's signature or
 * a struct's existing fields change (fields are only ever added at the
 * end, with struct_size telling the versions apart). Compare with
 * fm_abi_version() at run time. */
#define FM_ABI_VERSION 1
/* The library's version: fm_version() returns "MAJOR.MINOR.PATCH". */
#define FM_VERSION_MAJOR 0
#define FM_VERSION_MINOR 1
#define FM_VERSION_PATCH 0

typedef enum fm_status {
  FM_STATUS_OK = 0,
  /* A NULL where a pointer is needed, a struct_size this library does not
   * know, a value out of range (a token id, a count). */
  FM_STATUS_INVALID_ARGUMENT = 1,
  /* Not a live handle of this library: already freed, or never made. */
  FM_STATUS_INVALID_HANDLE = 2,
  /* A file that cannot be read, is no artifact or adapter, is corrupt,
   * is not signed by a trusted key, or needs more memory than allowed. */
  FM_STATUS_LOAD_FAILED = 3,
  /* The model lacks what the call needs (no tokenizer, no chat template,
   * no image encoder, no decoder). */
  FM_STATUS_UNSUPPORTED = 4,
  /* A caller's buffer is too small; the size needed was written. */
  FM_STATUS_BUFFER_TOO_SMALL = 5,
  /* fm_session_cancel stopped the generation. */
  FM_STATUS_CANCELLED = 6,
  /* Memory could not be allocated. */
  FM_STATUS_OUT_OF_MEMORY = 7,
  /* Any other failure of the runtime (a full context, a grammar that does
   * not compile, a template that fails to render, ...). */
  FM_STATUS_ERROR = 8,
  /* A bug in this library (an unexpected C++ exception, caught). */
  FM_STATUS_INTERNAL = 9
} fm_status;

typedef struct fm_model fm_model;
typedef struct fm_session fm_session;
typedef struct fm_tokenizer fm_tokenizer;
typedef struct fm_sampler fm_sampler;
typedef struct fm_adapter fm_adapter;
typedef struct fm_constraint fm_constraint;

/* ------------------------------------------------------------------------
 * Library
 * ---------------------------------------------------------------------- */

/* "MAJOR.MINOR.PATCH" of the library (not of the header). */
FM_API const char *fm_version(void);
/* FM_ABI_VERSION of the library. */
FM_API int fm_abi_version(void);
/* "FM_STATUS_OK", "FM_STATUS_INVALID_ARGUMENT", ...; "FM_STATUS_UNKNOWN"
 * for a value that is none of them. */
FM_API const char *fm_status_name(fm_status status);
/* The calling thread's last error message ("" before any). Valid until the
 * thread's next failing call. */
FM_API const char *fm_last_error(void);

/* ------------------------------------------------------------------------
 * Devices
 * ---------------------------------------------------------------------- */

typedef struct fm_device_info {
  size_t struct_size;
  const char *name;        /* "cpu", "vulkan", "metal", "cuda" */
  int built_in;            /* compiled into this library */
  int present;             /* built in and found on this machine */
  int hardware;            /* a real device, not a software emulation */
  const char *description; /* what was found, or why it is absent */
} fm_device_info;

FM_API fm_device_info fm_device_info_default(void);
/* The device kinds, best first (the order of the default choice). The
 * machine is probed once, on the first call; the strings live as long as
 * the process. */
FM_API fm_status fm_device_count(size_t *count);
FM_API fm_status fm_device_get(size_t index, fm_device_info *info);

/* ------------------------------------------------------------------------
 * Statically linked kernels (fmc compile --cpu-code static)
 * ---------------------------------------------------------------------- */

/* A generated CPU kernel: fmc's calling convention. */
typedef void (*fm_kernel_function)(void **args, int64_t rows, int64_t pos);
/* Registers an artifact's CPU kernels linked into the program (where code
 * cannot be loaded at run time: iOS; or by choice). The OUTPUT.kernels.c
 * that fmc writes beside the artifact calls it when the program starts
 * (and defines fm_register_kernels_KEY() to call it by hand); a model whose
 * kernels are not registered is refused at load, naming the key. Returns
 * an fm_status value (as int, so that the generated source needs no
 * header): FM_STATUS_INVALID_ARGUMENT for a malformed key or NULLs, or the
 * same key registered with other functions. Any thread, any time before
 * the model is loaded. */
FM_API int fm_static_kernels_register(const char *key, const char *const *names,
                                      const fm_kernel_function *functions,
                                      size_t n);

/* ------------------------------------------------------------------------
 * Models
 * ---------------------------------------------------------------------- */

typedef struct fm_load_params {
  size_t struct_size;
  /* "cpu", "vulkan", "metal", "cuda"; NULL or "": the best present
   * hardware device the artifact has code for. */
  const char *device;
  /* Minisign public keys (a .pub file's text or its base64 line): when
   * n_trusted_keys > 0, only an artifact signed by one of them loads. */
  const char *const *trusted_keys;
  size_t n_trusted_keys;
  /* Refuse an artifact whose session would need more bytes (KV caches,
   * activations, device copies); 0: the machine's physical memory. */
  uint64_t max_memory_bytes;
  /* Check every weight byte against the artifact's digest (slower load). */
  int verify_weights;
} fm_load_params;

FM_API fm_load_params fm_load_params_default(void);
/* Maps and verifies the artifact at `path` (the weights are used in place
 * from the mapping). */
FM_API fm_status fm_model_load(const char *path, const fm_load_params *params,
                               fm_model **model);
/* The same from `size` bytes at `data` (copied; the caller may free them
 * once the call returns); `name` stands for the file in messages (NULL:
 * "<buffer>"). */
FM_API fm_status fm_model_load_from_buffer(const void *data, size_t size,
                                           const char *name,
                                           const fm_load_params *params,
                                           fm_model **model);
FM_API fm_status fm_model_free(fm_model *model);
FM_API const char *fm_model_error(const fm_model *model);

typedef struct fm_model_info {
  size_t struct_size;
  const char *name;   /* the path (or name) it was loaded from */
  const char *family; /* "llama", "afm7", ... */
  const char *device; /* the device it runs on */
  int64_t vocab_size; /* logits per row */
  int64_t context_length; /* most tokens a session holds (0: no limit) */
  int64_t hidden_size;
  int64_t num_layers;
  int64_t parameters;
  int has_tokenizer;
  int has_chat_template;
  int has_decoder;
  int has_image_encoder;
  /* The image encoder's input [channels][height][width] and its tokens per
   * image; a VLM's placeholder id (-1: an encoder alone). 0 without one. */
  int64_t image_channels, image_height, image_width, image_tokens;
  int64_t image_token_id;
  /* Ids that end a text generation (EOS); n_stop_ids of them. */
  const int32_t *stop_ids;
  size_t n_stop_ids;
  /* The trusted key that signed it ("" when no keys were given). */
  const char *signed_by;
} fm_model_info;

FM_API fm_model_info fm_model_info_default(void);
/* The strings and arrays live as long as the model. */
FM_API fm_status fm_model_info_get(const fm_model *model, fm_model_info *info);

/* ------------------------------------------------------------------------
 * Samplers
 * ---------------------------------------------------------------------- */

typedef struct fm_sampler_params {
  size_t struct_size;
  float temperature; /* 0 (default): greedy argmax */
  int top_k;         /* keep the K most likely (0: all) */
  float top_p;       /* nucleus mass in (0, 1] (1: all) */
  uint64_t seed;     /* the draws are deterministic for a seed */
} fm_sampler_params;

FM_API fm_sampler_params fm_sampler_params_default(void);
FM_API fm_status fm_sampler_create(const fm_sampler_params *params,
                                   fm_sampler **sampler);
FM_API fm_status fm_sampler_free(fm_sampler *sampler);
FM_API const char *fm_sampler_error(const fm_sampler *sampler);

/* ------------------------------------------------------------------------
 * Sessions: one conversation (KV caches, activations) over a model
 * ---------------------------------------------------------------------- */

typedef struct fm_session_params {
  size_t struct_size;
  /* Kernel threads, the caller's included; 0: one per core. */
  int threads;
  /* How low-bit weights take their activations: "int11" (default),
   * "int8x2", "int8" or "f32"; NULL: the default. */
  const char *activations;
} fm_session_params;

FM_API fm_session_params fm_session_params_default(void);
/* Allocates the session's memory now; the model must have a decoder or an
 * image encoder. */
FM_API fm_status fm_session_create(fm_model *model,
                                   const fm_session_params *params,
                                   fm_session **session);
FM_API fm_status fm_session_free(fm_session *session);
FM_API const char *fm_session_error(const fm_session *session);

/* Forgets the context (and a chat): the next token goes to position 0. */
FM_API fm_status fm_session_reset(fm_session *session);
/* Keeps the first n tokens of the context (n <= position). */
FM_API fm_status fm_session_keep_prefix(fm_session *session, int64_t n);
/* Tokens processed so far: the position of the next token. */
FM_API fm_status fm_session_position(const fm_session *session,
                                     int64_t *position);
/* The context's tokens (*n of them; the array lives until the session's
 * next call). */
FM_API fm_status fm_session_tokens(const fm_session *session,
                                   const int32_t **tokens, size_t *n);

/* Feeds n tokens at the position. *logits gets the logits of the last one
 * (vocab_size floats), or with all_logits those of every one (n rows of
 * vocab_size, teacher forcing); logits may be NULL. */
FM_API fm_status fm_session_prefill(fm_session *session, const int32_t *tokens,
                                    size_t n, int all_logits,
                                    const float **logits);
/* Feeds one token; *logits gets its logits (vocab_size floats). */
FM_API fm_status fm_session_decode(fm_session *session, int32_t token,
                                   const float **logits);
/* Samples the next token from `logits` (vocab_size floats). */
FM_API fm_status fm_session_sample(fm_session *session, fm_sampler *sampler,
                                   const float *logits, int32_t *token);

/* Asks the generation running on the session (fm_session_generate_*,
 * fm_session_chat_say) to stop before its next token, or before the next
 * chunk of its prompt's prefill (prefill_chunk tokens); it returns
 * FM_STATUS_CANCELLED with what it generated so far in its result (nothing
 * when the prompt was not all prefilled). fm_session_prefill stops the same
 * way between its chunks (the model's largest) and returns
 * FM_STATUS_CANCELLED: the chunks it ran stay in the context
 * (fm_session_position says how far it got) and the pending images are
 * dropped. A cancel that comes while none of these runs stops the next one
 * at its start. Any thread may call it at any time. */
FM_API fm_status fm_session_cancel(fm_session *session);

/* Called with each generated token; return 0 to stop the generation, any
 * other value to go on. */
typedef int (*fm_token_callback)(int32_t token, void *user_data);
/* Called with each piece of generated text as soon as it is whole (never
 * half a UTF-8 character, never the start of a stop string); `text` is not
 * NUL-terminated. Return 0 to stop. */
typedef int (*fm_text_callback)(const char *text, size_t size,
                                void *user_data);

typedef struct fm_generate_params {
  size_t struct_size;
  int64_t max_new_tokens; /* default 256 */
  /* Text generations end when the text reaches one of these (not handed
   * out), or when one of stop_ids is sampled; the model's own stop ids
   * (EOS) are added unless use_model_stop_ids is 0. */
  const char *const *stop_strings;
  size_t n_stop_strings;
  const int32_t *stop_ids;
  size_t n_stop_ids;
  int use_model_stop_ids; /* default 1 */
  /* fm_session_generate_text: add the tokenizer's BOS to the prompt, as
   * Hugging Face's tokenizer(text) does (default 1). */
  int add_special_tokens;
  /* Leave special tokens out of the text (default 0). */
  int skip_special_tokens;
  /* Prompt tokens per prefill call (0: the model's largest). */
  int64_t prefill_chunk;
  /* Guided generation: the output follows this constraint (NULL: free). */
  const fm_constraint *constraint;
  /* Streaming: on_token for fm_session_generate_tokens, on_text for the
   * text generations; either may be NULL. */
  fm_token_callback on_token;
  fm_text_callback on_text;
  void *user_data;
} fm_generate_params;

typedef enum fm_stop_reason {
  FM_STOP_MAX_TOKENS = 0,  /* max_new_tokens were generated */
  FM_STOP_ID = 1,          /* a stop id (EOS) was sampled */
  FM_STOP_STRING = 2,      /* the text reached a stop string */
  FM_STOP_CONTEXT_FULL = 3,/* the KV cache is full */
  FM_STOP_CALLBACK = 4,    /* a callback returned 0, or fm_session_cancel */
  FM_STOP_CONSTRAINT = 5   /* fm_session_generate_tokens: the constraint is
                              complete (a text generation ends with its
                              stop id: FM_STOP_ID) */
} fm_stop_reason;

typedef struct fm_generation {
  size_t struct_size;
  /* The generated ids (a stop id that ended it included). */
  const int32_t *tokens;
  size_t n_tokens;
  /* The prompt as encoded (text) or given (ids). */
  const int32_t *prompt;
  size_t n_prompt;
  /* The generated text (NUL-terminated, text_size bytes before the NUL);
   * "" for fm_session_generate_tokens without a tokenizer. */
  const char *text;
  size_t text_size;
  fm_stop_reason stop;
  const char *stop_name; /* "max-new-tokens", "stop-id", ... */
  /* With a constraint: its output (the JSON, or with tools the call as
   * {"name": ..., "arguments": ...} or, without a call, the free text),
   * and whether it is complete; NULL and 1 without one. */
  const char *constrained;
  int complete;
  int is_tool_call;
  /* A chat turn: the context as rendered and encoded, and how many of its
   * tokens the KV cache already held (0 and NULL otherwise). */
  const int32_t *context;
  size_t n_context;
  int64_t reused_tokens;
  double prefill_ms, decode_ms;
} fm_generation;

FM_API fm_generate_params fm_generate_params_default(void);
FM_API fm_generation fm_generation_default(void);

/* Prefills `prompt` at the position and samples up to max_new_tokens ids,
 * feeding each back but the last; on_token sees each. Stops early on a
 * callback's 0, a full context or a complete constraint (no stop ids or
 * strings: ids need no tokenizer). The result lives until the session's
 * next call. */
FM_API fm_status fm_session_generate_tokens(fm_session *session,
                                           const int32_t *prompt, size_t n,
                                           fm_sampler *sampler,
                                           const fm_generate_params *params,
                                           fm_generation *result);
/* Text in, text out with the model's tokenizer: encodes `prompt`, prefills
 * it at the position, then samples and streams the text to on_text until a
 * stop id, a stop string, max_new_tokens, a full context, a callback or a
 * complete constraint ends it. */
FM_API fm_status fm_session_generate_text(fm_session *session,
                                          const char *prompt,
                                          fm_sampler *sampler,
                                          const fm_generate_params *params,
                                          fm_generation *result);

/* A chat with the model's chat template, kept in the session: every turn
 * renders the whole conversation, prefills only what the KV cache lacks and
 * generates the reply, which joins the conversation. fm_session_chat_start
 * resets the session and starts one (system and extra_json, a JSON object
 * of more template variables, may be NULL); fm_session_chat_say adds the
 * user's turn and replies (result->context, reused_tokens say what was
 * reused). fm_session_reset ends the chat. */
FM_API fm_status fm_session_chat_start(fm_session *session, const char *system,
                                       const char *extra_json);
FM_API fm_status fm_session_chat_say(fm_session *session, const char *user,
                                     fm_sampler *sampler,
                                     const fm_generate_params *params,
                                     fm_generation *result);

/* What the session has done, as one JSON object (position, threads,
 * memory_bytes, device, decode_tokens, first_run_ms, ...); lives until the
 * session's next call. */
FM_API fm_status fm_session_stats_json(const fm_session *session,
                                       const char **json);

/* ------------------------------------------------------------------------
 * Speculative decoding (fm/speculative.h, docs/speculative.md)
 * ---------------------------------------------------------------------- */

typedef struct fm_speculative_params {
  size_t struct_size;
  /* The drafter: a session over a draft model that tokenizes as the
   * session's model does (checked: the error names both files), which the
   * session's generations then drive (reset, prefill, decode; use it for
   * nothing else meanwhile, and keep it alive: a generation whose draft was
   * freed fails); or NULL for prompt lookup (n-grams of the context, no
   * model). */
  fm_session *draft;
  /* How the draft model samples its proposals (copied now; NULL: greedy).
   * Whatever it is, the output is distributed as the target's own
   * sampling, and greedy is the target's greedy output. */
  const fm_sampler *draft_sampler;
  int64_t draft_max;      /* most tokens drafted per round (default 4) */
  int64_t draft_min;      /* a shorter draft decodes one token (default 0) */
  float draft_p_min;      /* a draft model stops at a token less likely
                             than this (default 0) */
  int64_t lookup_ngram;   /* prompt lookup: the longest n-gram (default 3) */
} fm_speculative_params;

FM_API fm_speculative_params fm_speculative_params_default(void);
/* Makes the session's fm_session_generate_tokens and
 * fm_session_generate_text speculative (params NULL: plain again); chats
 * decode plainly. Each round the drafter proposes up to draft_max tokens
 * and the session's model checks them in one pass. fm_session_stats_json
 * then reports "drafted", "accepted" and "target_passes" of the last
 * generation. */
FM_API fm_status fm_session_set_speculative(fm_session *session,
                                            const fm_speculative_params *params);

/* ------------------------------------------------------------------------
 * Perplexity: llama-perplexity's method (fm/perplexity.h)
 * ---------------------------------------------------------------------- */

typedef struct fm_perplexity_params {
  size_t struct_size;
  int64_t ctx;           /* tokens per window, >= 3 (default 512) */
  int64_t chunks;        /* windows to score (0: all) */
  int32_t bos;           /* fed as each window's first token (-1: none) */
  int64_t prefill_chunk; /* 0: the model's largest */
} fm_perplexity_params;

typedef struct fm_perplexity_result {
  size_t struct_size;
  int64_t ctx, chunks, tokens_scored;
  double ppl, ppl_error;
  /* With a base session (KL divergence of base to model); 0 without. */
  int has_base;
  double base_ppl, base_ppl_error, delta_ppl, delta_ppl_error;
  double kl_mean, kl_mean_error, kl_p90, kl_p99, kl_p999;
  double top1_agree, top1_agree_error;
} fm_perplexity_result;

FM_API fm_perplexity_params fm_perplexity_params_default(void);
FM_API fm_perplexity_result fm_perplexity_result_default(void);
/* Scores n tokens with the session (and compares with `base`, which may be
 * NULL); both are reset before each window. */
FM_API fm_status fm_session_perplexity(fm_session *session,
                                       const int32_t *tokens, size_t n,
                                       const fm_perplexity_params *params,
                                       fm_session *base,
                                       fm_perplexity_result *result);
/* The same on a text, tokenized as llama-perplexity does (the model's
 * tokenizer, BOS first where it adds one, which params->bos is then set
 * to). */
FM_API fm_status fm_session_perplexity_text(fm_session *session,
                                            const char *text,
                                            const fm_perplexity_params *params,
                                            fm_session *base,
                                            fm_perplexity_result *result);

/* ------------------------------------------------------------------------
 * Tokenizers
 * ---------------------------------------------------------------------- */

/* The tokenizer the artifact embeds (FM_STATUS_UNSUPPORTED without). */
FM_API fm_status fm_model_tokenizer(const fm_model *model,
                                    fm_tokenizer **tokenizer);
/* A Hugging Face tokenizer.json, or a directory with it and
 * tokenizer_config.json. */
FM_API fm_status fm_tokenizer_open(const char *path, fm_tokenizer **tokenizer);
FM_API fm_status fm_tokenizer_free(fm_tokenizer *tokenizer);
FM_API const char *fm_tokenizer_error(const fm_tokenizer *tokenizer);

typedef struct fm_tokenizer_info {
  size_t struct_size;
  int64_t vocab_size;    /* one past the largest id */
  int32_t bos_id, eos_id; /* -1: none */
  int has_chat_template;
} fm_tokenizer_info;

FM_API fm_tokenizer_info fm_tokenizer_info_default(void);
FM_API fm_status fm_tokenizer_info_get(const fm_tokenizer *tokenizer,
                                       fm_tokenizer_info *info);

/* The caller's buffers: *n (or *size) gets the count needed; when the
 * buffer holds fewer (capacity), FM_STATUS_BUFFER_TOO_SMALL is returned and
 * nothing is written, so that a call with capacity 0 (the buffer may then
 * be NULL) asks for the size. */

/* The ids of `size` bytes of text, as Hugging Face's encode(text,
 * add_special_tokens=add_special). */
FM_API fm_status fm_tokenizer_encode(const fm_tokenizer *tokenizer,
                                     const char *text, size_t size,
                                     int add_special, int32_t *ids,
                                     size_t capacity, size_t *n);
/* The text of n ids, NUL-terminated: *size is its length without the NUL,
 * and capacity must hold the NUL too. */
FM_API fm_status fm_tokenizer_decode(const fm_tokenizer *tokenizer,
                                     const int32_t *ids, size_t n,
                                     int skip_special, char *text,
                                     size_t capacity, size_t *size);
/* The tokenizer's chat template rendered with `messages_json`, a JSON
 * array of {"role": ..., "content": ...} (or a JSON object of all the
 * template's variables, "messages" among them), as transformers'
 * apply_chat_template(tokenize=False) does; NUL-terminated as decode. */
FM_API fm_status fm_tokenizer_apply_chat_template(
    const fm_tokenizer *tokenizer, const char *messages_json,
    int add_generation_prompt, char *text, size_t capacity, size_t *size);

/* ------------------------------------------------------------------------
 * Guided generation: JSON Schema, GBNF, regex, tools
 * ---------------------------------------------------------------------- */

typedef enum fm_constraint_kind {
  FM_CONSTRAINT_JSON_SCHEMA = 0, /* source: a JSON Schema */
  FM_CONSTRAINT_GBNF = 1,        /* source: a llama.cpp GBNF grammar */
  FM_CONSTRAINT_REGEX = 2,       /* source: an ECMA-262 regex */
  FM_CONSTRAINT_TOOLS = 3        /* source: an OpenAI-style tools list */
} fm_constraint_kind;

typedef struct fm_constraint_params {
  size_t struct_size;
  fm_constraint_kind kind;
  const char *source;
  /* FM_CONSTRAINT_TOOLS: "auto" (default: text until the model opens a
   * call) or "required" (a call from the first token). */
  const char *tool_choice;
} fm_constraint_params;

FM_API fm_constraint_params fm_constraint_params_default(void);
/* Compiles the constraint over the model's tokenizer (the model must have
 * one); the model's stop ids end a complete output. Reusable by any number
 * of generations and threads (fm_generate_params.constraint). */
FM_API fm_status fm_constraint_create(const fm_model *model,
                                      const fm_constraint_params *params,
                                      fm_constraint **constraint);
FM_API fm_status fm_constraint_free(fm_constraint *constraint);
FM_API const char *fm_constraint_error(const fm_constraint *constraint);

/* ------------------------------------------------------------------------
 * LoRA adapters (.fmba, fmc compile-adapter)
 * ---------------------------------------------------------------------- */

/* Loads and binds an adapter to `model` (checked against it). */
FM_API fm_status fm_adapter_load(const fm_model *model, const char *path,
                                 fm_adapter **adapter);
FM_API fm_status fm_adapter_load_from_buffer(const fm_model *model,
                                             const void *data, size_t size,
                                             const char *name,
                                             fm_adapter **adapter);
FM_API fm_status fm_adapter_free(fm_adapter *adapter);
FM_API const char *fm_adapter_error(const fm_adapter *adapter);
/* Runs the session with y = W x + sum of scales[i] * s_i B_i(A_i x) over
 * the n adapters (0: the base alone, exactly); replaces the ones it had.
 * The context is kept (fm_session_reset to start over). */
FM_API fm_status fm_session_set_adapters(fm_session *session,
                                         const fm_adapter *const *adapters,
                                         const float *scales, size_t n);

/* ------------------------------------------------------------------------
 * Images (a VLM, or an image encoder alone)
 * ---------------------------------------------------------------------- */

/* Decodes a PNG or JPEG file, preprocesses it as the model's encoder says
 * (fm_model_info's image_* fields) and encodes it. In a VLM its tokens are
 * kept for the next prefill, the images taken in the order they were added:
 * - fm_session_prefill, fm_session_generate_tokens: the prompt holds
 *   image_tokens placeholder ids (image_token_id) per image;
 * - fm_session_generate_text: each "<image>" in the prompt takes the next
 *   image (a prompt without one gets them all before its text), and the
 *   numbers must match (FM_STATUS_INVALID_ARGUMENT names both);
 * - in a chat (after fm_session_chat_start) the conversation keeps the image
 *   for as long as it lasts, and each "<image>" in a user turn of
 *   fm_session_chat_say takes the next image not yet taken.
 * *tokens, *rows and *width (each may be NULL) get the encoder's rows x
 * width floats, valid until the session's next call (in a chat, until the
 * chat ends). */
FM_API fm_status fm_session_add_image_file(fm_session *session,
                                           const char *path,
                                           const float **tokens,
                                           int64_t *rows, int64_t *width);
/* The same from an image already preprocessed: `count` floats
 * [channels][height][width]. */
FM_API fm_status fm_session_add_image_tensor(fm_session *session,
                                             const float *tensor, size_t count,
                                             const float **tokens,
                                             int64_t *rows, int64_t *width);

#ifdef __cplusplus
}
#endif

#endif /* FM_FM_H */
