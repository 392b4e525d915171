// docs/numerics.md's edge-class table must be exactly what the codec writes: the table is
// regenerated here and compared with the text between the edge-table markers.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "proptests/docs/edge_table.h"

namespace fp8ref {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(Docs, EdgeClassTableEqualsCodecOutput) {
  const std::string doc = read_file(FP8REF_SOURCE_DIR "/docs/numerics.md");
  const std::string begin = "<!-- edge-table:begin -->\n", end = "<!-- edge-table:end -->";
  const auto b = doc.find(begin), e = doc.find(end);
  ASSERT_NE(b, std::string::npos) << "docs/numerics.md lacks the edge-table markers";
  ASSERT_NE(e, std::string::npos);
  std::string want;
  for (Format f : {Format::e4m3, Format::e5m2, Format::e8m0}) want += docs::edge_table(f) + "\n";
  EXPECT_EQ(doc.substr(b + begin.size(), e - b - begin.size()), want)
      << "regenerate the table: build and run fp8ref_docs_table_print";
}

}  // namespace
}  // namespace fp8ref
