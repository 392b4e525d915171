// torch.save zip subset tests. Pickles are assembled opcode by opcode exactly as torch's
// protocol-2 pickler emits them (torch/serialization.py), so the tests need no torch install.
#include <gtest/gtest.h>

#include "tensor_io/tensor_file.h"
#include "tensor_io/torch_zip.h"
#include "tensor_io/zip_archive.h"
#include "test_util.h"

namespace fp8ref::tensor_io {
namespace {

struct Pickle {
  std::vector<std::uint8_t> b{0x80, 0x02};
  Pickle& op(std::uint8_t o) { return b.push_back(o), *this; }
  Pickle& str(const std::string& s) {
    op('X');
    test::put_le(b, s.size(), 4);
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Pickle& integer(std::int32_t v) {
    return op('J'), test::put_le(b, static_cast<std::uint32_t>(v), 4), *this;
  }
  Pickle& global(const std::string& m, const std::string& n) {
    op('c');
    for (const std::string& s : {m, n}) b.insert(b.end(), s.begin(), s.end()), b.push_back('\n');
    return *this;
  }
  Pickle& ints(const std::vector<std::int32_t>& xs) {
    op('(');
    for (auto x : xs) integer(x);
    return op('t');
  }
  // _rebuild_tensor_v2(('storage', torch.<type>, key, 'cpu', numel), offset, size, stride, False,
  // OrderedDict())
  Pickle& tensor(const std::string& type, const std::string& key, int numel, int offset,
                 const std::vector<std::int32_t>& size, const std::vector<std::int32_t>& stride) {
    global("torch._utils", "_rebuild_tensor_v2").op('(');
    op('(').str("storage").global("torch", type).str(key).str("cpu").integer(numel).op('t').op('Q');
    integer(offset).ints(size).ints(stride).op(0x89);
    global("collections", "OrderedDict").op(')').op('R');
    return op('t').op('R');
  }
  std::vector<std::uint8_t> done() { return op('.'), b; }
};

std::vector<std::uint8_t> torch_zip(const std::vector<std::uint8_t>& pkl,
                                    const std::vector<ZipMember>& storages) {
  std::vector<ZipMember> m = {{"archive/data.pkl", pkl},
                              {"archive/byteorder", test::bytes_of("little")}};
  for (const ZipMember& s : storages) m.emplace_back("archive/data/" + s.first, s.second);
  return serialize_zip_stored(m, "mem");
}

std::vector<std::uint8_t> f32_storage(int n) {
  std::vector<std::uint8_t> v;
  for (int i = 0; i < n; ++i) {
    const float f = static_cast<float>(i);
    std::uint32_t u;
    std::memcpy(&u, &f, 4);
    test::put_le(v, u, 4);
  }
  return v;
}

std::vector<float> floats(const Tensor& t) {
  std::vector<float> out(t.data.size() / 4);
  std::memcpy(out.data(), t.data.data(), t.data.size());
  return out;
}

TEST(TorchZip, SharedStorageViewsAreMaterialisedInCOrder) {
  Pickle p;
  p.op('}').op('(');
  p.str("a").tensor("FloatStorage", "0", 6, 0, {2, 3}, {3, 1});
  p.str("t").tensor("FloatStorage", "0", 6, 0, {3, 2}, {1, 3});  // a.T
  p.str("s").tensor("FloatStorage", "0", 6, 4, {2}, {1});        // a.flatten()[4:]
  p.str("step").integer(7);
  p.op('u');
  const TensorFile tf = parse_torch_zip(torch_zip(p.done(), {{"0", f32_storage(6)}}), "mem.pt", {});
  ASSERT_EQ(tf.tensors.size(), 3u);
  EXPECT_EQ(floats(*tf.find("a")), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(floats(*tf.find("t")), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(tf.find("t")->shape, (std::vector<std::int64_t>{3, 2}));
  EXPECT_EQ(floats(*tf.find("s")), (std::vector<float>{4, 5}));
  EXPECT_EQ(tf.metadata.at("step"), "7");
}

TEST(TorchZip, Fp8StoragesNestedContainersAndStateDictMetadata) {
  Pickle p;
  p.global("collections", "OrderedDict").op(')').op('R');  // state_dict(): OrderedDict ...
  p.op('(').str("w").op(']').op('(');
  p.tensor("Float8_e4m3fnStorage", "0", 4, 0, {4}, {1});
  p.tensor("Float8_e8m0fnuStorage", "1", 1, 0, {}, {});
  p.op('e').op('u');
  p.op('}').str("_metadata").op('}').op('s').op('b');  // ... with its _metadata state (BUILD)
  const std::vector<std::uint8_t> e4m3 = {0x38, 0x7e, 0xff, 0x80};
  const TensorFile tf =
      parse_tensor_bytes(torch_zip(p.done(), {{"0", e4m3}, {"1", {127}}}), "mem.pt", {});
  ASSERT_EQ(tf.tensors.size(), 2u);
  EXPECT_EQ(tf.tensors[0].name, "w.0");
  EXPECT_EQ(tf.tensors[0].tensor.dtype, DType::F8_E4M3);
  EXPECT_EQ(tf.tensors[0].tensor.data, e4m3);
  EXPECT_EQ(tf.tensors[1].name, "w.1");
  EXPECT_EQ(tf.tensors[1].tensor.dtype, DType::F8_E8M0);
  EXPECT_TRUE(tf.tensors[1].tensor.shape.empty());
}

void expect_refused(const std::vector<std::uint8_t>& file, const std::string& needle) {
  try {
    parse_tensor_bytes(file, "bad.pt", {});
    ADD_FAILURE() << "accepted, expected: " << needle;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(TorchZip, ForeignGlobalsOpcodesAndBadViewsAreRefused) {
  Pickle evil;
  evil.global("os", "system").str("echo pwned").op(0x85).op('R');
  expect_refused(torch_zip(evil.done(), {}), "global 'os.system'");
  Pickle inst;
  inst.op('(').op('i');
  expect_refused(torch_zip(inst.done(), {}), "opcode 0x69");
  Pickle past;
  past.tensor("FloatStorage", "0", 6, 2, {2, 3}, {3, 1});
  expect_refused(torch_zip(past.done(), {{"0", f32_storage(6)}}), "reaches past its storage");
  Pickle missing;
  missing.tensor("FloatStorage", "9", 6, 0, {6}, {1});
  expect_refused(torch_zip(missing.done(), {{"0", f32_storage(6)}}), "archive/data/9' is missing");
  Pickle small;
  small.tensor("FloatStorage", "0", 6, 0, {6}, {1});
  expect_refused(torch_zip(small.done(), {{"0", f32_storage(5)}}), "fewer than");
  Pickle under;
  under.op('R');
  expect_refused(torch_zip(under.done(), {}), "underflow");
  Pickle memo;
  memo.op('h').op(3);
  expect_refused(torch_zip(memo.done(), {}), "memo key 3");
  std::vector<std::uint8_t> legacy = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46,
                                      0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19, '.'};
  expect_refused(legacy, "legacy");
  Pickle cyclic;  // l = []; l.append(l)
  cyclic.op(']').op('q').op(0).op('h').op(0).op('a');
  expect_refused(torch_zip(cyclic.done(), {}), "nesting deeper");
}

}  // namespace
}  // namespace fp8ref::tensor_io
