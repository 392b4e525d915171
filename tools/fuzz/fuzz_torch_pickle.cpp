// Structure-aware libFuzzer harness for the torch.save reader's pickle VM and object walker
// (docs/security.md): each input byte picks one opcode of the torch tensors-only subset (with its
// argument drawn from the next bytes), so that mutations stay well-formed pickles that reach the
// memo, shared sub-objects, persistent ids and _rebuild_tensor_v2 rather than dying in the first
// opcode. The pickle is packed into a torch.save zip with two storages and read as a file would
// be. Any input must parse or throw tensor_io::Error inside the read limit; a crash, a sanitizer
// report, a timeout or an allocation over -malloc_limit_mb is a finding.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tensor_io/tensor_file.h"
#include "tensor_io/zip_archive.h"

namespace {

using Pickle = std::vector<std::uint8_t>;

class Input {
 public:
  Input(const std::uint8_t* d, std::size_t n) : d_(d), n_(n) {}
  bool done() const { return i_ >= n_; }
  std::uint8_t next() { return i_ < n_ ? d_[i_++] : 0; }

 private:
  const std::uint8_t* d_;
  std::size_t n_;
  std::size_t i_ = 0;
};

void put(Pickle& p, std::string_view s) { p.insert(p.end(), s.begin(), s.end()); }

void put_str(Pickle& p, std::string_view s) {  // SHORT_BINUNICODE
  p.push_back(0x8c);
  p.push_back(static_cast<std::uint8_t>(s.size()));
  put(p, s);
}

constexpr std::array<std::string_view, 8> kStrings{"storage", "cpu",    "0", "1",
                                                   "w",       "layers", "",  "2"};
constexpr std::array<std::string_view, 8> kGlobals{"torch._utils\n_rebuild_tensor_v2\n",
                                                   "torch._utils\n_rebuild_tensor_v3\n",
                                                   "torch._utils\n_rebuild_parameter\n",
                                                   "collections\nOrderedDict\n",
                                                   "torch\nFloatStorage\n",
                                                   "torch\nDoubleStorage\n",
                                                   "torch\nByteStorage\n",
                                                   "torch\nfloat8_e4m3fn\n"};
// Opcodes that take no argument: MARK ( ) ] } t l TUPLE1..3 a e s u 0 1 2 N NEWTRUE NEWFALSE
// BINPERSID REDUCE BUILD MEMOIZE.
constexpr std::string_view kBare =
    "()]}tl\x85\x86\x87"
    "aesu012N\x88\x89QRb\x94";

// One opcode chosen by the selector byte, its argument from the following bytes.
void emit(Pickle& p, Input& in) {
  const std::uint8_t sel = in.next();
  const std::uint8_t arg = in.next();
  switch (sel % 8) {
    case 0: put_str(p, kStrings[arg % kStrings.size()]); break;
    case 1: p.push_back('c'), put(p, kGlobals[arg % kGlobals.size()]); break;
    case 2: p.push_back('K'), p.push_back(arg); break;                                // BININT1
    case 3: p.push_back('h'), p.push_back(arg % 16); break;                           // BINGET
    case 4: p.push_back('q'), p.push_back(arg % 16); break;                           // BINPUT
    case 5: p.push_back('J'), put(p, std::string(4, static_cast<char>(arg))); break;  // BININT
    case 6: p.push_back(arg); break;  // any byte: an opcode outside
    default: p.push_back(static_cast<std::uint8_t>(kBare[arg % kBare.size()])); break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Input in(data, size);
  Pickle p{0x80, 0x02};
  while (!in.done()) emit(p, in);
  p.push_back('.');
  using fp8ref::tensor_io::ZipMember;
  std::vector<ZipMember> members;
  members.emplace_back("archive/data.pkl", std::move(p));
  members.emplace_back("archive/byteorder",
                       std::vector<std::uint8_t>{'l', 'i', 't', 't', 'l', 'e'});
  members.emplace_back("archive/data/0", std::vector<std::uint8_t>(64, 0x3c));
  members.emplace_back("archive/data/1", std::vector<std::uint8_t>(8, 0x7f));
  const std::vector<std::uint8_t> zip = fp8ref::tensor_io::serialize_zip_stored(members, "fuzz");
  fp8ref::tensor_io::ReadOptions opts;
  opts.max_bytes = std::uint64_t{64} << 20;
  opts.max_read_bytes = std::uint64_t{64} << 20;  // within -malloc_limit_mb: a blow-up is a finding
  try {
    fp8ref::tensor_io::parse_tensor_bytes(zip, "fuzz", opts);
  } catch (const fp8ref::tensor_io::Error&) {
  }
  return 0;
}
