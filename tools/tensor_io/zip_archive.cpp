// ZIP reader/writer (zip_archive.h). Layout per PKWARE APPNOTE.TXT 6.3.x sections 4.3 and 4.5.
#include "zip_archive.h"

#include <zlib.h>

#include <algorithm>
#include <limits>

namespace fp8ref::tensor_io {
namespace {

constexpr std::uint32_t kLocalSig = 0x04034b50;
constexpr std::uint32_t kCentralSig = 0x02014b50;
constexpr std::uint32_t kEocdSig = 0x06054b50;
constexpr std::uint32_t kZip64EocdSig = 0x06064b50;
constexpr std::uint32_t kZip64LocatorSig = 0x07064b50;
constexpr std::uint64_t kDeflateMaxRatio = 1032;  // deflate cannot expand more than ~1032:1

std::uint32_t crc32_of(Bytes b) {
  uLong c = crc32(0L, Z_NULL, 0);
  std::size_t pos = 0;
  while (pos < b.size()) {
    const auto chunk = static_cast<uInt>(std::min<std::size_t>(b.size() - pos, 1u << 30));
    c = crc32(c, b.data() + pos, chunk);
    pos += chunk;
  }
  return static_cast<std::uint32_t>(c);
}

// Zip64 extended information extra field (APPNOTE 4.5.3): only saturated fields are present.
void apply_zip64_extra(ZipEntry& e, Bytes extra, bool u_sat, bool c_sat, bool o_sat,
                       std::string_view file) {
  ByteReader r(extra, file, "zip extra field");
  while (r.remaining() >= 4) {
    const auto id = r.le<std::uint16_t>();
    const auto len = r.le<std::uint16_t>();
    ByteReader f(r.take(len), file, "zip64 extra field");
    if (id != 0x0001) continue;
    if (u_sat) e.uncompressed_size = f.le<std::uint64_t>();
    if (c_sat) e.compressed_size = f.le<std::uint64_t>();
    if (o_sat) e.local_offset = f.le<std::uint64_t>();
    return;
  }
  if (u_sat || c_sat || o_sat)
    fail(file, "zip entry '" + e.name + "' has saturated sizes but no zip64 field");
}

ZipEntry read_central_entry(ByteReader& r, std::string_view file) {
  if (r.le<std::uint32_t>() != kCentralSig)
    fail(file, "zip central directory entry has a bad signature");
  r.take(4);  // versions
  ZipEntry e;
  e.flags = r.le<std::uint16_t>();
  e.method = r.le<std::uint16_t>();
  r.take(4);  // time, date
  e.crc = r.le<std::uint32_t>();
  const auto csize = r.le<std::uint32_t>();
  const auto usize = r.le<std::uint32_t>();
  const auto name_len = r.le<std::uint16_t>();
  const auto extra_len = r.le<std::uint16_t>();
  const auto comment_len = r.le<std::uint16_t>();
  r.take(8);  // disk, internal attrs, external attrs
  const auto offset = r.le<std::uint32_t>();
  e.name = std::string(r.str(name_len));
  const Bytes extra = r.take(extra_len);
  r.take(comment_len);
  e.compressed_size = csize;
  e.uncompressed_size = usize;
  e.local_offset = offset;
  constexpr std::uint32_t kSat = 0xffffffff;
  apply_zip64_extra(e, extra, usize == kSat, csize == kSat, offset == kSat, file);
  return e;
}

std::size_t find_eocd(Bytes b, std::string_view file) {
  if (b.size() < 22) fail(file, "too short to be a zip archive");
  const std::size_t last = b.size() - 22;
  const std::size_t first = last > 65535 ? last - 65535 : 0;
  for (std::size_t i = last + 1; i-- > first;) {
    if (load_le(b.subspan(i, 4), 4) == kEocdSig) return i;
  }
  fail(file, "zip end-of-central-directory record not found");
}

}  // namespace

bool looks_like_zip(Bytes bytes) {
  return bytes.size() >= 4 && (load_le(bytes, 4) == kLocalSig || load_le(bytes, 4) == kEocdSig);
}

ZipReader::ZipReader(Bytes bytes, std::string file, const ReadOptions& opts)
    : ZipReader(bytes, std::move(file), opts.max_bytes) {
  if (opts.budget != nullptr) {
    own_budget_.reset();
    budget_ = opts.budget;
  } else if (opts.max_read_bytes != 0) {
    *own_budget_ = ReadBudget(opts.max_read_bytes, file_);
  }
}

ZipReader::ZipReader(Bytes bytes, std::string file, std::uint64_t max_bytes)
    : bytes_(bytes), file_(std::move(file)), max_bytes_(max_bytes) {
  own_budget_ = std::make_shared<ReadBudget>(read_limit({}, bytes_.size(), file_), file_);
  budget_ = own_budget_.get();
  const std::size_t eocd = find_eocd(bytes_, file_);
  ByteReader r(bytes_.subspan(eocd + 4), file_, "zip end record");
  r.take(4);  // disk numbers
  std::uint64_t count = r.le<std::uint16_t>();
  if (r.le<std::uint16_t>() != count) fail(file_, "multi-disk zip archives are not supported");
  std::uint64_t cd_size = r.le<std::uint32_t>();
  std::uint64_t cd_offset = r.le<std::uint32_t>();
  if (count == 0xffff || cd_size == 0xffffffff || cd_offset == 0xffffffff) {
    if (eocd < 20) fail(file_, "zip64 locator missing");
    ByteReader loc(bytes_.subspan(eocd - 20, 20), file_, "zip64 locator");
    if (loc.le<std::uint32_t>() != kZip64LocatorSig) fail(file_, "zip64 locator missing");
    loc.take(4);
    const auto z64 = loc.le<std::uint64_t>();
    if (z64 > bytes_.size()) fail(file_, "zip64 end record offset beyond the file");
    ByteReader z(bytes_.subspan(static_cast<std::size_t>(z64)), file_, "zip64 end record");
    if (z.le<std::uint32_t>() != kZip64EocdSig) fail(file_, "zip64 end record has a bad signature");
    z.take(20);  // record size, versions, disk numbers
    count = z.le<std::uint64_t>();
    if (z.le<std::uint64_t>() != count) fail(file_, "multi-disk zip archives are not supported");
    cd_size = z.le<std::uint64_t>();
    cd_offset = z.le<std::uint64_t>();
  }
  read_central_directory(cd_offset, cd_size, count);
}

void ZipReader::read_central_directory(std::uint64_t cd_offset, std::uint64_t cd_size,
                                       std::uint64_t count) {
  if (cd_offset > bytes_.size() || cd_size > bytes_.size() - cd_offset) {
    fail(file_, "zip central directory lies outside the file");
  }
  if (count > cd_size / 46)
    fail(file_, "zip entry count " + std::to_string(count) + " does not fit the central directory");
  ByteReader r(
      bytes_.subspan(static_cast<std::size_t>(cd_offset), static_cast<std::size_t>(cd_size)), file_,
      "zip central directory");
  for (std::uint64_t i = 0; i < count; ++i) {
    ZipEntry e = read_central_entry(r, file_);
    if (!index_.emplace(e.name, entries_.size()).second)
      fail(file_, "zip archive has two entries named '" + e.name + "'");
    entries_.push_back(std::move(e));
  }
}

const ZipEntry* ZipReader::find(std::string_view name) const {
  const auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &entries_[it->second];
}

Bytes ZipReader::entry_payload(const ZipEntry& e) const {
  const std::string where = "zip entry '" + e.name + "'";
  if (e.local_offset > bytes_.size()) fail(file_, where + ": local header offset beyond the file");
  ByteReader r(bytes_.subspan(static_cast<std::size_t>(e.local_offset)), file_, where);
  if (r.le<std::uint32_t>() != kLocalSig) fail(file_, where + ": local header has a bad signature");
  r.take(22);
  const auto name_len = r.le<std::uint16_t>();
  const auto extra_len = r.le<std::uint16_t>();
  r.take(std::uint64_t{name_len} + extra_len);
  if (e.compressed_size > r.remaining())
    fail(file_, where + ": compressed data runs past the end of the file");
  return r.take(e.compressed_size);
}

void ZipReader::charge(const ZipEntry& e) const {
  budget_->charge(e.uncompressed_size, "zip entry '" + e.name + "' (" +
                                           std::to_string(e.uncompressed_size) +
                                           " bytes decompressed)");
}

std::vector<std::uint8_t> ZipReader::extract(const ZipEntry& e) const {
  const std::string where = "zip entry '" + e.name + "'";
  if (e.flags & 0x1) fail(file_, where + " is encrypted");
  if (e.method != 0 && e.method != 8)
    fail(file_, where + " uses unsupported compression method " + std::to_string(e.method));
  if (e.uncompressed_size > max_bytes_) {
    fail(file_, where + " claims " + std::to_string(e.uncompressed_size) +
                    " bytes, above the limit of " + std::to_string(max_bytes_));
  }
  const Bytes payload = entry_payload(e);
  std::vector<std::uint8_t> out;
  if (e.method == 0) {
    if (e.compressed_size != e.uncompressed_size)
      fail(file_, where + ": stored entry with differing sizes");
    charge(e);
    out.assign(payload.begin(), payload.end());
  } else {
    if (e.uncompressed_size > e.compressed_size * kDeflateMaxRatio + 1024) {
      fail(file_, where + " claims " + std::to_string(e.uncompressed_size) + " bytes from " +
                      std::to_string(e.compressed_size) +
                      " deflated bytes (beyond deflate's 1032:1 ratio)");
    }
    charge(e);
    out.resize(static_cast<std::size_t>(e.uncompressed_size));
    z_stream zs{};
    if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) fail(file_, where + ": zlib init failed");
    std::size_t in_pos = 0, out_pos = 0;
    int rc = Z_OK;
    while (rc == Z_OK) {
      const std::size_t in_chunk = std::min<std::size_t>(payload.size() - in_pos, 1u << 30);
      const std::size_t out_chunk = std::min<std::size_t>(out.size() - out_pos, 1u << 30);
      zs.next_in = const_cast<Bytef*>(payload.data() + in_pos);
      zs.avail_in = static_cast<uInt>(in_chunk);
      zs.next_out = out.data() + out_pos;
      zs.avail_out = static_cast<uInt>(out_chunk);
      rc = inflate(&zs, Z_NO_FLUSH);
      in_pos += in_chunk - zs.avail_in;
      out_pos += out_chunk - zs.avail_out;
      if (rc == Z_OK && in_chunk - zs.avail_in == 0 && out_chunk - zs.avail_out == 0)
        rc = Z_BUF_ERROR;
    }
    inflateEnd(&zs);
    if (rc != Z_STREAM_END || out_pos != out.size()) {
      fail(file_, where + ": deflate stream is corrupt or its size differs from the directory");
    }
  }
  if (crc32_of(out) != e.crc) fail(file_, where + ": CRC-32 mismatch");
  return out;
}

std::vector<std::uint8_t> serialize_zip_stored(const std::vector<ZipMember>& members,
                                               std::string_view file) {
  std::vector<std::uint8_t> out, cd;
  auto put = [](std::vector<std::uint8_t>& v, std::uint64_t x, int n) {
    for (int i = 0; i < n; ++i) v.push_back(static_cast<std::uint8_t>(x >> (8 * i)));
  };
  for (const auto& [name, data] : members) {
    if (data.size() >= 0xffffffffu || name.size() > 0xffff || out.size() >= 0xffffffffu) {
      fail(file, "zip member '" + name + "' too large for a non-zip64 archive");
    }
    const std::uint32_t crc = crc32_of(data);
    const std::uint64_t local = out.size();
    for (std::vector<std::uint8_t>* v : {&out, &cd}) {
      const bool central = v == &cd;
      put(*v, central ? kCentralSig : kLocalSig, 4);
      if (central) put(*v, 20, 2);  // version made by
      put(*v, 20, 2);               // version needed
      put(*v, 0, 2);                // flags
      put(*v, 0, 2);                // method: stored
      put(*v, 0, 2);                // time
      put(*v, 0x21, 2);             // date 1980-01-01
      put(*v, crc, 4);
      put(*v, data.size(), 4);
      put(*v, data.size(), 4);
      put(*v, name.size(), 2);
      put(*v, 0, 2);  // extra
      if (central) {
        put(*v, 0, 6);  // comment length, disk number, internal attributes
        put(*v, 0, 4);  // external attributes
        put(*v, local, 4);
      }
      v->insert(v->end(), name.begin(), name.end());
    }
    out.insert(out.end(), data.begin(), data.end());
  }
  const std::uint64_t cd_offset = out.size();
  out.insert(out.end(), cd.begin(), cd.end());
  put(out, kEocdSig, 4);
  put(out, 0, 4);
  put(out, members.size(), 2);
  put(out, members.size(), 2);
  put(out, cd.size(), 4);
  put(out, cd_offset, 4);
  put(out, 0, 2);
  return out;
}

}  // namespace fp8ref::tensor_io
