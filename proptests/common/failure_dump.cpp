// Minimal safetensors writer for failing test cases (see failure_dump.h). Format: 8-byte LE
// header length, JSON header (dtype, shape, data_offsets per tensor, __metadata__), raw data.
#include "proptests/common/failure_dump.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fp8ref::test {

namespace {

std::string json_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace

DumpTensor u8_tensor(std::string name, const std::vector<std::uint8_t>& v) {
  return {std::move(name), "U8", v.size(), v};
}

DumpTensor u64_tensor(std::string name, const std::vector<std::uint64_t>& v) {
  DumpTensor t{std::move(name), "U64", v.size(), {}};
  t.bytes.reserve(v.size() * 8);
  for (std::uint64_t x : v)
    for (int i = 0; i < 8; ++i) t.bytes.push_back(std::uint8_t(x >> (8 * i)));
  return t;
}

std::string dump_failure_case(std::string_view case_name, const std::vector<DumpTensor>& tensors,
                              const std::map<std::string, std::string>& metadata) {
  std::ostringstream header;
  header << "{\"__metadata__\":{";
  bool first = true;
  for (const auto& [k, v] : metadata) {
    header << (first ? "" : ",") << '"' << json_escape(k) << "\":\"" << json_escape(v) << '"';
    first = false;
  }
  header << '}';
  std::uint64_t offset = 0;
  for (const DumpTensor& t : tensors) {
    header << ",\"" << json_escape(t.name) << "\":{\"dtype\":\"" << t.dtype << "\",\"shape\":["
           << t.count << "],\"data_offsets\":[" << offset << ',' << offset + t.bytes.size() << "]}";
    offset += t.bytes.size();
  }
  header << '}';
  std::string h = header.str();
  while (h.size() % 8 != 0) h += ' ';

  const char* env = std::getenv("FP8REF_FAILURE_DIR");
  const std::filesystem::path dir = env && *env ? env : "fp8ref-failures";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::filesystem::path path = dir / (std::string(case_name) + ".safetensors");
  std::ofstream out(path, std::ios::binary);
  if (!out) return "(not written: cannot open " + path.string() + ")";
  char len[8];
  for (int i = 0; i < 8; ++i) len[i] = char(std::uint64_t(h.size()) >> (8 * i));
  out.write(len, 8);
  out.write(h.data(), std::streamsize(h.size()));
  for (const DumpTensor& t : tensors)
    out.write(reinterpret_cast<const char*>(t.bytes.data()), std::streamsize(t.bytes.size()));
  if (!out) return "(not written: write failed for " + path.string() + ")";
  return std::filesystem::absolute(path).string();
}

std::string dump_mismatches(std::string_view case_name, const std::vector<Mismatch>& mismatches,
                            const std::map<std::string, std::string>& metadata) {
  std::vector<std::uint64_t> input;
  std::vector<std::uint8_t> config, ref_z, got_z;
  for (const Mismatch& m : mismatches) {
    input.push_back(m.input);
    config.push_back(m.config);
    ref_z.push_back(m.ref_z);
    got_z.push_back(m.got_z);
  }
  return dump_failure_case(case_name,
                           {u64_tensor("input", input), u8_tensor("config", config),
                            u8_tensor("ref_z", ref_z), u8_tensor("got_z", got_z)},
                           metadata);
}

std::string format_mismatches(const std::vector<Mismatch>& mismatches,
                              const std::vector<std::string>& config_names, int hex_digits,
                              std::size_t limit) {
  std::ostringstream os;
  for (std::size_t i = 0; i < mismatches.size() && i < limit; ++i) {
    const Mismatch& m = mismatches[i];
    char buf[160];
    const std::string& name =
        m.config < config_names.size() ? config_names[m.config] : std::string("?");
    std::snprintf(buf, sizeof buf, "  input 0x%0*llx [%s]: ref_z 0x%02x got_z 0x%02x\n", hex_digits,
                  static_cast<unsigned long long>(m.input), name.c_str(), m.ref_z, m.got_z);
    os << buf;
  }
  return os.str();
}

}  // namespace fp8ref::test
