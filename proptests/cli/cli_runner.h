// Runs the fp8-check executable (path from FP8REF_FP8_CHECK, set by CMake) as a child process
// with given stdin text, capturing stdout, stderr and the exit status, for the CLI tests.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

extern char** environ;

namespace fp8ref::test {

struct CliRun {
  int status = -1;  // exit status; 128 + signal when killed
  std::string out;
  std::string err;
};

inline std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// fp8-check args... < stdin_text. Files under $TMPDIR (or /tmp) carry the three streams.
inline CliRun run_fp8_check(const std::vector<std::string>& args,
                            const std::string& stdin_text = "") {
  const char* tmp = std::getenv("TMPDIR");
  std::string base = std::string(tmp && *tmp ? tmp : "/tmp") + "/fp8ref_cli_XXXXXX";
  std::vector<char> dir(base.begin(), base.end());
  dir.push_back('\0');
  if (mkdtemp(dir.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  const std::string d(dir.data());
  const std::string in = d + "/in", out = d + "/out", err = d + "/err";
  std::ofstream(in, std::ios::binary) << stdin_text;

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, in.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<std::string> argv_s = {FP8REF_FP8_CHECK};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw std::runtime_error("cannot run " + argv_s[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  CliRun r;
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  r.out = slurp(out);
  r.err = slurp(err);
  std::remove(in.c_str());
  std::remove(out.c_str());
  std::remove(err.c_str());
  rmdir(d.c_str());
  return r;
}

// Number of '\n'-terminated lines in s.
inline int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

}  // namespace fp8ref::test
