#pragma once
// The `luminal` command-line tool: one binary, one file per subcommand.
//
//   luminal inspect DIR               what a Hugging Face model folder holds
//   luminal tokenize DIR "text"       token ids and pieces
//   luminal run DIR --prompt TEXT     greedy generation (Llama-family models, CPU backend)
//
// A subcommand is a function that adds itself to the root app (CLI11) and sets its callback;
// main.cpp calls each one. Callbacks report problems by throwing luminal::Error, which main
// prints as "luminal: error: ..." with exit code 1. Later subcommands (run, bench, serve) add a
// file and a line to main.cpp.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <string>

namespace luminal::cli {

void add_inspect(CLI::App& app);
void add_tokenize(CLI::App& app);
void add_run(CLI::App& app);

/// Checks that `dir` is an existing folder (errors name it and say what is expected there).
void require_model_folder(const std::filesystem::path& dir);
/// `text` with control characters, backslashes and DEL escaped (\n, \t, \r, \\, \xNN).
std::string escape(std::string_view text);

}  // namespace luminal::cli
