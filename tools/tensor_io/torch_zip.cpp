// torch.save zip reader (torch_zip.h): walks the unpickled object, loads each storage once from the
// archive, bounds-checks every view against its storage and copies it out in C order.
#include "torch_zip.h"

#include <cstring>
#include <map>
#include <unordered_set>

#include "torch_pickle.h"

namespace fp8ref::tensor_io {
namespace {

constexpr int kMaxDepth = 64;

std::string data_pkl_prefix(const ZipReader& zip) {
  for (const ZipEntry& e : zip.entries()) {
    const std::size_t slash = e.name.find('/');
    if (slash != std::string::npos && e.name.substr(slash) == "/data.pkl")
      return e.name.substr(0, slash);
  }
  return {};
}

class Walker {
 public:
  Walker(const ZipReader& zip, std::string prefix, const ReadOptions& opts)
      : zip_(zip), prefix_(std::move(prefix)), opts_(opts) {}

  // Every visit is charged: a pickle's memo can share sub-objects, so the tree walked may be
  // exponentially larger than the graph (nested shared tuples); the budget bounds it.
  void walk(const PyRef& v, const std::string& name, int depth) {
    zip_.budget().charge(kPickleNodeBytes, "the torch object graph (nodes visited)");
    if (depth > kMaxDepth)
      fail(zip_.file(),
           "torch object nesting deeper than " + std::to_string(kMaxDepth) + " (or cyclic)");
    const std::string dot = name.empty() ? "" : name + ".";
    switch (v->kind) {
      case PyValue::Kind::Tensor: add(name.empty() ? "tensor" : name, v->tensor); break;
      case PyValue::Kind::Dict:
        for (const auto& [k, x] : v->dict) walk(x, dot + key_string(*k), depth + 1);
        break;
      case PyValue::Kind::List:
      case PyValue::Kind::Tuple:
        for (std::size_t i = 0; i < v->items.size(); ++i)
          walk(v->items[i], dot + std::to_string(i), depth + 1);
        break;
      case PyValue::Kind::Int: out_.metadata[name] = std::to_string(v->i); break;
      case PyValue::Kind::Float: out_.metadata[name] = std::to_string(v->f); break;
      case PyValue::Kind::Bool: out_.metadata[name] = v->i ? "True" : "False"; break;
      case PyValue::Kind::Str: out_.metadata[name] = v->s; break;
      case PyValue::Kind::None: out_.metadata[name] = "None"; break;
      default:
        fail(zip_.file(),
             "torch object '" + name + "' is a bare storage or callable, not a tensor");
    }
  }
  TensorFile take() { return std::move(out_); }

 private:
  std::string key_string(const PyValue& k) {
    if (k.kind == PyValue::Kind::Str) return k.s;
    if (k.kind == PyValue::Kind::Int) return std::to_string(k.i);
    fail(zip_.file(), "torch dict key is neither a string nor an integer");
  }

  const std::vector<std::uint8_t>& storage(const PickledTensor& p) {
    auto it = storages_.find(p.storage_key);
    if (it != storages_.end()) return it->second;
    const std::string member = prefix_ + "/data/" + p.storage_key;
    const ZipEntry* e = zip_.find(member);
    if (e == nullptr)
      fail(zip_.file(), "torch storage '" + member + "' is missing from the archive");
    std::vector<std::uint8_t> bytes = zip_.extract(*e);
    const std::uint64_t w = static_cast<std::uint64_t>(dtype_bits(p.dtype)) / 8;
    if (p.storage_numel > bytes.size() / w) {
      fail(zip_.file(), "torch storage '" + member + "' holds " + std::to_string(bytes.size()) +
                            " bytes, fewer than its " + std::to_string(p.storage_numel) +
                            " elements need");
    }
    return storages_.emplace(p.storage_key, std::move(bytes)).first->second;
  }

  void add(const std::string& name, const PickledTensor& p) {
    const std::string& file = zip_.file();
    const std::uint64_t n = checked_numel(p.size, file);
    const std::size_t w = static_cast<std::size_t>(dtype_bits(p.dtype) / 8);
    if (n > opts_.max_bytes / w) fail(file, "tensor '" + name + "' exceeds the size limit");
    const std::vector<std::uint8_t>& src = storage(p);
    zip_.budget().charge(n * w, "tensor '" + name + "' (materialised)");
    std::vector<std::uint8_t> dst(n * w);
    if (n > 0) {
      auto last = static_cast<std::uint64_t>(p.offset);
      bool overflow = false;
      for (std::size_t k = 0; k < p.size.size(); ++k) {
        std::uint64_t term = 0;
        overflow |= __builtin_mul_overflow(static_cast<std::uint64_t>(p.size[k] - 1),
                                           static_cast<std::uint64_t>(p.stride[k]), &term);
        overflow |= __builtin_add_overflow(last, term, &last);
      }
      // Against the storage's real bytes, not only its pickled element count: a storage key
      // read again with a wider dtype or a larger count must not reach past what was loaded.
      if (overflow || last >= p.storage_numel || last >= src.size() / w) {
        fail(file, "tensor '" + name + "' (offset " + std::to_string(p.offset) + ", size " +
                       shape_string(p.size) + ", stride " + shape_string(p.stride) +
                       ") reaches past its storage of " + std::to_string(p.storage_numel) +
                       " elements");
      }
      copy_strided(p, src, dst, w);
    }
    std::vector<std::int64_t> shape = p.size;
    Tensor t{p.dtype, shape, std::move(dst)};
    if (p.fp4_x2) {
      if (shape.empty()) fail(file, "tensor '" + name + "': 0-d float4_e2m1fn_x2 tensor");
      t = reinterpret_as(std::move(t.data), std::move(shape), 8, DType::F4, file);
    }
    if (const std::optional<DType> as = opts_.as_for(name))
      t = reinterpret_as(std::move(t.data), std::move(t.shape), dtype_bits(t.dtype), *as, file);
    if (!names_.insert(name).second) fail(file, "two tensors are named '" + name + "'");
    out_.tensors.push_back({name, std::move(t)});
  }

  static void copy_strided(const PickledTensor& p, const std::vector<std::uint8_t>& src,
                           std::vector<std::uint8_t>& dst, std::size_t w) {
    const std::size_t nd = p.size.size();
    std::vector<std::int64_t> idx(nd, 0);
    const std::size_t n = dst.size() / w;
    for (std::size_t i = 0; i < n; ++i) {
      std::int64_t off = p.offset;
      for (std::size_t k = 0; k < nd; ++k) off += idx[k] * p.stride[k];
      std::memcpy(dst.data() + i * w, src.data() + static_cast<std::size_t>(off) * w, w);
      for (std::size_t k = nd; k-- > 0;) {
        if (++idx[k] < p.size[k]) break;
        idx[k] = 0;
      }
    }
  }

  const ZipReader& zip_;
  std::string prefix_;
  const ReadOptions& opts_;
  std::map<std::string, std::vector<std::uint8_t>> storages_;
  std::unordered_set<std::string> names_;
  TensorFile out_;
};

}  // namespace

bool zip_is_torch(const ZipReader& zip) { return !data_pkl_prefix(zip).empty(); }

TensorFile parse_torch_zip(const ZipReader& zip, const ReadOptions& opts) {
  const std::string prefix = data_pkl_prefix(zip);
  if (prefix.empty())
    fail(zip.file(), "zip archive has no <prefix>/data.pkl: not a torch.save file");
  const ZipEntry* byteorder = zip.find(prefix + "/byteorder");
  if (byteorder != nullptr) {
    const std::vector<std::uint8_t> b = zip.extract(*byteorder);
    if (std::string(b.begin(), b.end()) != "little")
      fail(zip.file(), "torch archive byteorder is not 'little'");
  }
  const std::vector<std::uint8_t> pkl = zip.extract(*zip.find(prefix + "/data.pkl"));
  const PickleGraph graph =
      unpickle_torch(pkl, zip.file() + ":" + prefix + "/data.pkl", zip.budget());
  Walker w(zip, prefix, opts);
  w.walk(graph.root, "", 0);
  return w.take();
}

TensorFile parse_torch_zip(Bytes bytes, std::string_view file, const ReadOptions& opts_in) {
  const BudgetScope scope(opts_in, bytes.size(), file);
  const ReadOptions& opts = scope.options();
  const ZipReader zip(bytes, std::string(file), opts);
  return parse_torch_zip(zip, opts);
}

bool looks_like_legacy_torch(Bytes bytes) {
  static constexpr std::uint8_t kMagic[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c,
                                            0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};
  const bool pickle_magic =
      bytes.size() >= sizeof kMagic && std::memcmp(bytes.data(), kMagic, sizeof kMagic) == 0;
  const bool tar = bytes.size() >= 262 && std::memcmp(bytes.data() + 257, "ustar", 5) == 0;
  return pickle_magic || tar;
}

}  // namespace fp8ref::tensor_io
