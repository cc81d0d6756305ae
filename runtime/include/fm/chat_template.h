// fm::ChatTemplate: renders a tokenizer_config.json chat_template (a Jinja2
// subset) exactly as transformers does with python3-jinja2.
#pragma once

#include "fm/status.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fm {

namespace chat {
struct Node;
}

struct ChatMessage {
  std::string role;
  std::string content;
};

struct ChatTemplateOptions {
  bool addGenerationPrompt = true;
  /// The special-token variables (tokenizer_config.json's bos_token, ...);
  /// empty ones are left undefined.
  std::string bosToken, eosToken, unkToken, padToken;
  /// A JSON object of more variables (tools, documents, enable_thinking,
  /// ...); they override the ones above.
  std::string extraJson;
  /// What strftime_now() formats (seconds since the epoch, local time);
  /// nullopt: the clock.
  std::optional<int64_t> now;
  size_t maxOutputBytes = 64u << 20;
  /// Statements and loop iterations before rendering gives up (real chat
  /// templates take thousands; this stops a hostile one within seconds).
  uint64_t maxSteps = 5'000'000;
};

/// Compiled once, rendered as often as needed; copies share it. Supports
/// Jinja2's if/elif/else, for (loop.*, else, filters), set (namespace
/// attributes, blocks), macro, break/continue, whitespace control, and the
/// expressions, filters, tests and str/dict methods chat templates use,
/// with transformers' environment: trim_blocks, lstrip_blocks,
/// raise_exception, strftime_now, tojson (json.dumps), tools=None.
class ChatTemplate {
public:
  /// Parses `source`; `name` prefixes error messages
  /// ("tokenizer_config.json: chat_template line 3: ...").
  static Expected<ChatTemplate> compile(std::string_view source,
                                        const std::string &name = "chat_template");

  /// Renders with `messages` (role/content) and the options' variables.
  Expected<std::string> render(const std::vector<ChatMessage> &messages,
                               const ChatTemplateOptions &options = {}) const;
  /// Renders with the variables of a JSON object (messages, tools,
  /// add_generation_prompt, ...); the options fill in what it leaves out.
  Expected<std::string> renderJson(std::string_view contextJson,
                                   const ChatTemplateOptions &options = {}) const;

private:
  std::string name_;
  std::shared_ptr<const std::vector<std::shared_ptr<const chat::Node>>> nodes_;
};

} // namespace fm
