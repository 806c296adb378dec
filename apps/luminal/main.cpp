// luminal: the command-line tool (see commands.hpp for the subcommands and how to add one).
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include <unistd.h>
#include "apps/luminal/commands.hpp"

#include "luminal/core/error.hpp"
#include "luminal/models/model_files.hpp"

namespace luminal::cli {

void require_model_folder(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) {
    throw Error(dir.string() +
                ": no such folder; give a Hugging Face model folder (config.json, *.safetensors, "
                "tokenizer.json), e.g. one downloaded with `huggingface-cli download MODEL "
                "--local-dir DIR`");
  }
  if (!std::filesystem::is_directory(dir, ec)) {
    throw Error(dir.string() + ": not a folder; give the model folder that holds config.json");
  }
}

std::filesystem::path model_path(const std::string& given) {
  if (!given.empty()) return given;
  const std::filesystem::path d = models::default_model_path();
  std::error_code ec;
  if (!std::filesystem::exists(d, ec))
    throw Error("no model given, and the default model is not there (" + d.string() +
                "): give a Hugging Face folder or a .gguf file, or fetch the default with "
                "`make run` or scripts/fetch_smollm2.sh");
  return d;
}

CompileOptions compile_options(double budget_s) {
  // A prefill of a real model can take longer than the default 1 s per timed run.
  CompileOptions o = CompileOptions().search_graph_limit(20).profile_timeout(30).verbose(
      isatty(STDERR_FILENO) != 0);
  if (budget_s > 0) o.time_budget(budget_s);
  return o;
}

std::string escape(std::string_view text) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      case '\\': out += "\\\\"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += "\\x";
          out += hex[c >> 4];
          out += hex[c & 15];
        } else {
          out += ch;
        }
    }
  }
  return out;
}

}  // namespace luminal::cli

namespace {

int fail(const std::string& message) {
  std::cout.flush();
  std::cerr << "luminal: error: " << message << "\n";
  return 1;
}

// A CLI11 parse error in our words: what was wrong, then the --help to read.
std::string usage_error(const CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    names.push_back(sub->get_name());
  std::string list;
  for (const std::string& n : names)
    list += (list.empty() ? "" : ", ") + n;
  // The subcommand given on the command line, if any.
  std::string sub;
  for (int i = 1; i < argc && sub.empty(); ++i)
    for (const std::string& n : names)
      if (n == argv[i]) sub = n;
  if (sub.empty()) {
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg.starts_with("-"))
        return "unknown option '" + arg + "' (options go after the subcommand: " + list +
               "); run `luminal --help`";
      return "unknown subcommand '" + arg + "' (subcommands: " + list + "); run `luminal --help`";
    }
    return "a subcommand is required (" + list + "); run `luminal --help`";
  }
  std::string what = e.what();  // "DIR is required", "The following argument was not expected: x"
  if (what.size() > 1 && what[0] >= 'A' && what[0] <= 'Z' && what[1] >= 'a' && what[1] <= 'z')
    what[0] = static_cast<char>(what[0] - 'A' + 'a');
  return what + "; run `luminal " + sub + " --help`";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("luminal: a search-based inference compiler for Hugging Face models", "luminal");
  app.require_subcommand(1);
  app.set_version_flag("--version", "luminal 0.1");
  luminal::cli::add_inspect(app);
  luminal::cli::add_tokenize(app);
  luminal::cli::add_run(app);
  luminal::cli::add_bench(app);
  // Every error prints "luminal: error: <message>" on stderr and exits with code 1; --help and
  // --version print to stdout and exit with 0.
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    return fail(usage_error(app, e, argc, argv));
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  return 0;
}
