// luminal: the command-line tool (see commands.hpp for the subcommands and how to add one).
#include <exception>
#include <iostream>

#include "apps/luminal/commands.hpp"
#include "luminal/core/error.hpp"

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

int main(int argc, char** argv) {
  CLI::App app("luminal: a search-based inference compiler for Hugging Face models", "luminal");
  app.require_subcommand(1);
  app.set_version_flag("--version", "luminal 0.1");
  luminal::cli::add_inspect(app);
  luminal::cli::add_tokenize(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const luminal::Error& e) {
    std::cout.flush();
    std::cerr << "luminal: error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << "luminal: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
