// Chat-template parity with jinja2 (as transformers renders): every case of
// $LUMINAL_FIXTURES/chat/cases.json, written by scripts/fixtures/gen_chat_templates.py, must
// render byte for byte, or fail with the same message (where marked) at the same template line.
#include "luminal/io/chat_template.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "luminal/core/error.hpp"

namespace {

using luminal::io::ChatMessage;
using luminal::io::ChatTemplate;
using Json = nlohmann::ordered_json;

std::filesystem::path fixtures() {
  const char* dir = std::getenv("LUMINAL_FIXTURES");
  return dir ? std::filesystem::path(dir) / "chat" : std::filesystem::path();
}

const Json& cases() {
  static Json doc = [] {
    std::ifstream f(fixtures() / "cases.json");
    if (!f) return Json();
    std::stringstream ss;
    ss << f.rdbuf();
    return Json::parse(ss.str());
  }();
  return doc;
}

#define REQUIRE_FIXTURES()                                     \
  if (cases().is_null())                                       \
  GTEST_SKIP() << "LUMINAL_FIXTURES/chat/cases.json missing; " \
                  "run scripts/fixtures/generate.sh"

int line_of(const std::string& what) {
  std::smatch m;
  static const std::regex re(" line (\\d+): ");
  return std::regex_search(what, m, re) ? std::stoi(m[1]) : -1;
}

// The line where two outputs first differ, both ways.
std::string first_difference(const std::string& want, const std::string& got) {
  size_t at = 0;
  while (at < want.size() && at < got.size() && want[at] == got[at])
    ++at;
  auto line_around = [at](const std::string& s) {
    size_t b = s.rfind('\n', at == 0 ? 0 : at - 1);
    b = b == std::string::npos ? 0 : b + 1;
    size_t e = s.find('\n', at);
    return s.substr(b, e == std::string::npos ? std::string::npos : e - b);
  };
  return "at byte " + std::to_string(at) + "\n  jinja2: " + line_around(want) +
         "\n  ours:   " + line_around(got);
}

std::string case_name(const Json& c) {
  std::string n = c["template"].get<std::string>();
  if (c.contains("conversation")) n += " / " + c["conversation"].get<std::string>();
  if (c.contains("context_name")) n += " / context " + c["context_name"].get<std::string>();
  if (c.contains("add_generation_prompt") && c["add_generation_prompt"].get<bool>()) n += " +gen";
  return n;
}

TEST(ChatTemplate, ParityWithJinja2) {
  REQUIRE_FIXTURES();
  // strftime_now at the fixtures' fixed time (gen_chat_templates.py FIXED_EPOCH), not today's.
  setenv("SOURCE_DATE_EPOCH", "1721952000", 1);
  const Json& doc = cases();
  std::map<std::string, std::optional<ChatTemplate>> compiled;
  std::map<std::string, std::string> parse_errors;
  for (const auto& [name, src] : doc["templates"].items()) {
    try {
      compiled[name] = ChatTemplate::from_string(src.get<std::string>(), name);
    } catch (const luminal::Error& e) {
      compiled[name] = std::nullopt;
      parse_errors[name] = e.what();
    }
  }
  int passed = 0, total = 0;
  for (const auto& c : doc["cases"]) {
    ++total;
    std::string name = case_name(c);
    std::string tname = c["template"].get<std::string>();
    std::string got, error;
    bool failed = false;
    if (!compiled[tname]) {
      failed = true;
      error = parse_errors[tname];
    } else {
      try {
        if (c.contains("context")) {
          got = compiled[tname]->render_json(c["context"].dump());
        } else {
          std::vector<ChatMessage> messages;
          for (const auto& m : doc["conversations"][c["conversation"].get<std::string>()])
            messages.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
          std::map<std::string, std::string> vars;
          for (const auto& [k, v] : c["variables"].items())
            vars[k] = v.get<std::string>();
          got = compiled[tname]->render(messages, c["add_generation_prompt"].get<bool>(), vars);
        }
      } catch (const luminal::Error& e) {
        failed = true;
        error = e.what();
      }
    }
    if (c.contains("expected")) {
      if (failed) {
        ADD_FAILURE() << name << ": unexpected error: " << error;
        continue;
      }
      if (got != c["expected"].get<std::string>()) {
        ADD_FAILURE() << name << ": output differs\n" << first_difference(c["expected"], got);
        continue;
      }
    } else {
      const Json& want = c["error"];
      if (!failed) {
        ADD_FAILURE() << name << ": expected error '" << want["message"].get<std::string>()
                      << "', rendered:\n"
                      << got;
        continue;
      }
      if (line_of(error) != want["line"].get<int>()) {
        ADD_FAILURE() << name << ": error line " << line_of(error) << ", jinja2 says "
                      << want["line"].get<int>() << ": " << error;
        continue;
      }
      bool check = !want.contains("check_message") || want["check_message"].get<bool>();
      if (check && error.find(want["message"].get<std::string>()) == std::string::npos) {
        ADD_FAILURE() << name << ": error message '" << error << "' lacks '"
                      << want["message"].get<std::string>() << "'";
        continue;
      }
    }
    ++passed;
  }
  EXPECT_EQ(passed, total);
  std::cout << "chat template parity: " << passed << "/" << total << " cases\n";
}

TEST(ChatTemplate, ErrorsNameTemplateAndLine) {
  try {
    ChatTemplate::from_string("ok\n{% for x in y %}\n{{ x | nope }}\n{% endfor %}", "mine");
    FAIL() << "expected a syntax error";
  } catch (const luminal::Error& e) {
    EXPECT_NE(std::string(e.what()).find("chat template 'mine' line 3"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("No filter named 'nope'"), std::string::npos) << e.what();
  }
  auto t =
      ChatTemplate::from_string("a\n\n{{ raise_exception('boom: ' ~ messages | length) }}", "t");
  try {
    t.render({{"user", "x"}}, false);
    FAIL() << "expected raise_exception";
  } catch (const luminal::Error& e) {
    EXPECT_EQ(std::string(e.what()), "chat template 't' line 3: boom: 1");
  }
  EXPECT_THROW(ChatTemplate::from_string("{% for x in y %}", "u"), luminal::Error);
  // Inside an `if`, an unknown filter fails only when it runs (as in jinja2).
  auto lazy = ChatTemplate::from_string("ok\n{% if x %}\n{{ x | nope }}\n{% endif %}", "lazy");
  EXPECT_EQ(lazy.render({{"user", "x"}}, false), "ok\n");
  try {
    lazy.render({{"user", "x"}}, false, {{"x", "1"}});
    FAIL() << "expected an unknown-filter error";
  } catch (const luminal::Error& e) {
    EXPECT_NE(std::string(e.what()).find("chat template 'lazy' line 3: No filter named 'nope'"),
              std::string::npos)
        << e.what();
  }
}

TEST(ChatTemplate, Builtins) {
  auto families = ChatTemplate::builtin_families();
  EXPECT_EQ(families.size(), 4u);
  std::vector<ChatMessage> conv{{"user", "Hi"}};
  EXPECT_EQ(ChatTemplate::builtin("chatml").render(conv, true),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(
      ChatTemplate::builtin("llama3").render(conv, true, {{"bos_token", "<|begin_of_text|>"}}),
      "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
      "<|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_THROW(ChatTemplate::builtin("nope"), luminal::Error);
}

TEST(ChatTemplate, StrftimeNow) {
  const char* was = std::getenv("SOURCE_DATE_EPOCH");
  const std::string saved = was ? was : "";
  unsetenv("SOURCE_DATE_EPOCH");
  auto t = ChatTemplate::from_string("{{ strftime_now('%Y') | length }}");
  EXPECT_EQ(t.render({}, false), "4");
  // SOURCE_DATE_EPOCH fixes the time (UTC); a value that is not a number is ignored.
  auto d = ChatTemplate::from_string("{{ strftime_now('%d %b %Y %H:%M') }}");
  setenv("SOURCE_DATE_EPOCH", "1721952000", 1);
  EXPECT_EQ(d.render({}, false), "26 Jul 2024 00:00");
  setenv("SOURCE_DATE_EPOCH", "soon", 1);
  EXPECT_EQ(t.render({}, false), "4");
  if (was) {
    setenv("SOURCE_DATE_EPOCH", saved.c_str(), 1);
  } else {
    unsetenv("SOURCE_DATE_EPOCH");
  }
}

TEST(ChatTemplate, FromFolder) {
  REQUIRE_FIXTURES();
  const Json& doc = cases();
  auto dir = fixtures() / "folders";
  std::vector<ChatMessage> conv{{"user", "Hi"}};

  auto qwen = ChatTemplate::from_folder(dir / "config_string");
  EXPECT_EQ(qwen.source(), doc["templates"]["family:qwen2.5"].get<std::string>());
  EXPECT_EQ(qwen.special_tokens().at("eos_token"), "<|im_end|>");
  EXPECT_EQ(qwen.special_tokens().count("bos_token"), 0u);

  auto mistral = ChatTemplate::from_folder(dir / "config_list");
  EXPECT_EQ(mistral.source(), doc["templates"]["family:mistral"].get<std::string>());
  EXPECT_EQ(mistral.special_tokens().at("bos_token"), "<s>");
  EXPECT_EQ(mistral.render(conv, false, mistral.special_tokens()), "<s>[INST] Hi [/INST]");

  auto llama = ChatTemplate::from_folder(dir / "jinja_file");
  EXPECT_EQ(llama.source(), doc["templates"]["family:llama3.1"].get<std::string>());
  EXPECT_EQ(llama.special_tokens().at("bos_token"), "<|begin_of_text|>");

  EXPECT_THROW(ChatTemplate::from_folder(dir / "none"), luminal::Error);
}

}  // namespace
