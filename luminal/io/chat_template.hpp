#pragma once
// Chat templates: renders a model's own Jinja `chat_template` with a built-in interpreter of the
// Jinja subset chat templates use, exactly as transformers' apply_chat_template renders it
// (jinja2 with trim_blocks, lstrip_blocks, loopcontrols; tojson, raise_exception, strftime_now).
// Example: examples/snippets/io/chat_template.cpp.
//
// Supported: text with {%- -%} / {{- -}} whitespace control; if/elif/else, for (loop.index,
// index0, revindex, revindex0, first, last, length, previtem, nextitem, cycle; `if` filter;
// else; break/continue), set (names, tuples, namespace attributes, blocks), macro and calls;
// literals, lists, dicts, tuples, attribute/item access, slices, filters, tests, not/and/or,
// comparisons, in, arithmetic, ~, a if c else b; Python str/dict methods. Errors are
// luminal::Error naming the template and line.
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace luminal::io {

namespace chat {
struct Program;
}

struct ChatMessage {
  std::string role;
  std::string content;
};

class ChatTemplate {
 public:
  /// chat_template.jinja, else tokenizer_config.json's "chat_template" (a string, or a list of
  /// {name, template} from which "default" is taken), else chat_template.json. Throws
  /// luminal::Error when the folder has none (use builtin()). special_tokens() gets the
  /// tokenizer_config.json strings bos_token, eos_token, unk_token, pad_token when present.
  static ChatTemplate from_folder(const std::filesystem::path& dir);
  /// Parses `source`; syntax errors throw luminal::Error with `name` and the line.
  static ChatTemplate from_string(std::string source, std::string name = "chat_template");
  /// "llama3", "chatml" (Qwen), "gemma" or "mistral".
  static ChatTemplate builtin(std::string_view family);
  static std::vector<std::string_view> builtin_families();

  /// Renders `messages` with variables `messages`, `add_generation_prompt`, `tools = none`,
  /// `documents = none` and every entry of `variables` as a string (bos_token, eos_token, ...).
  std::string render(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                     const std::map<std::string, std::string>& variables = {}) const;
  /// Renders with a JSON object as the variables (structured message content, tools, ...);
  /// `tools` and `documents` default to none.
  std::string render_json(std::string_view context_json) const;

  const std::string& name() const;
  const std::string& source() const;
  const std::map<std::string, std::string>& special_tokens() const { return special_tokens_; }

 private:
  ChatTemplate() = default;
  std::shared_ptr<const chat::Program> program_;
  std::map<std::string, std::string> special_tokens_;
};

}  // namespace luminal::io
