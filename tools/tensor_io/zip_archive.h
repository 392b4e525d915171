// Minimal ZIP (PKWARE APPNOTE 6.3) reader for npz and torch.save archives: stored and deflated
// entries, zip64 sizes/offsets, CRC-32 check, and a bomb guard (an entry may not claim more than
// ReadOptions::max_bytes nor more than deflate's 1032:1 maximum ratio). Writer: stored entries.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "byte_reader.h"

namespace fp8ref::tensor_io {

struct ZipEntry {
  std::string name;
  std::uint16_t method = 0;  // 0 stored, 8 deflated; others refused on extract
  std::uint16_t flags = 0;
  std::uint32_t crc = 0;
  std::uint64_t compressed_size = 0;
  std::uint64_t uncompressed_size = 0;
  std::uint64_t local_offset = 0;
};

class ZipReader {
 public:
  // Extraction is charged to a budget of the archive's own (ReadOptions defaults).
  ZipReader(Bytes bytes, std::string file, std::uint64_t max_bytes);
  // Extraction is charged to opts.budget (or, when null, to a budget of the archive's own).
  ZipReader(Bytes bytes, std::string file, const ReadOptions& opts);
  const std::vector<ZipEntry>& entries() const { return entries_; }
  const ZipEntry* find(std::string_view name) const;
  std::vector<std::uint8_t> extract(const ZipEntry& e) const;
  const std::string& file() const { return file_; }
  ReadBudget& budget() const { return *budget_; }  // what extraction is charged to

 private:
  void read_central_directory(std::uint64_t cd_offset, std::uint64_t cd_size, std::uint64_t count);
  Bytes entry_payload(const ZipEntry& e) const;
  void charge(const ZipEntry& e) const;  // to the read budget, before the bytes are allocated

  Bytes bytes_;
  std::string file_;
  std::uint64_t max_bytes_;
  std::vector<ZipEntry> entries_;
  std::unordered_map<std::string, std::size_t> index_;  // name -> entries_ position
  std::shared_ptr<ReadBudget> own_budget_;              // when no budget was given
  ReadBudget* budget_ = nullptr;
};

bool looks_like_zip(Bytes bytes);

using ZipMember = std::pair<std::string, std::vector<std::uint8_t>>;
// Stored (uncompressed) archive; members must be < 4 GiB each (no zip64 on write).
std::vector<std::uint8_t> serialize_zip_stored(const std::vector<ZipMember>& members,
                                               std::string_view file);

}  // namespace fp8ref::tensor_io
