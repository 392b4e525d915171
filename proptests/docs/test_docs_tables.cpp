// docs/numerics.md's edge-class tables must be exactly what the codec writes: the tables are
// regenerated here and compared with the text between the edge-table (f32 inputs) and the
// source-table (f16 / bf16 / f64 inputs) markers.
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

// The text between <!-- NAME:begin --> and <!-- NAME:end --> (empty when a marker is missing).
std::string between_markers(const std::string& doc, const std::string& name) {
  const std::string begin = "<!-- " + name + ":begin -->\n", end = "<!-- " + name + ":end -->";
  const auto b = doc.find(begin), e = doc.find(end);
  if (b == std::string::npos || e == std::string::npos || e < b) return {};
  return doc.substr(b + begin.size(), e - b - begin.size());
}

constexpr Format kFormats[] = {Format::e4m3, Format::e5m2, Format::e8m0};

TEST(Docs, EdgeClassTableEqualsCodecOutput) {
  const std::string doc = read_file(FP8REF_SOURCE_DIR "/docs/numerics.md");
  std::string want;
  for (Format f : kFormats) want += docs::edge_table(f) + "\n";
  EXPECT_EQ(between_markers(doc, "edge-table"), want)
      << "regenerate the tables: build and run fp8ref_docs_table_print";
}

TEST(Docs, NonF32SourceTableEqualsCodecOutput) {
  const std::string doc = read_file(FP8REF_SOURCE_DIR "/docs/numerics.md");
  std::string want;
  for (Format f : kFormats) want += docs::source_table(f) + "\n";
  EXPECT_EQ(between_markers(doc, "source-table"), want)
      << "regenerate the tables: build and run fp8ref_docs_table_print";
}

}  // namespace
}  // namespace fp8ref
