// The .fmba loader (fm/adapter.h: AdapterFile). Any bytes either verify into
// an adapter whose matrices the kernels can read as they are, or give an
// error that names the file and the element at fault; nothing here may
// crash on a bad file.
//
// What verify() establishes, in order:
//   - a size-prefixed FlatBuffer with identifier "FMBA" whose schema_version
//     (read first, through AdapterHeader) is this runtime's, and which then
//     passes the FlatBuffers verifier;
//   - the data section [align64(4 + N), + data_size) lies in the file, and
//     the digest (BLAKE2b-256 of the file up to its end, the digest's own
//     bytes as zeros) matches, unless a fuzzer turned the check off;
//   - the base names a family; there is at least one lora, every one names
//     a distinct weight, has a rank in [1, 4096] and a finite scale;
//   - its A is [rank, in] and its Bᵀ [rank, out], each f16 or q8 (groups of
//     32, 64 or 128 dividing its columns), sized as its shape, 64-aligned
//     and inside the data section.
// Whether the base is the one the adapter was compiled for (digest,
// architecture, projections and their shapes) is checked by Adapter::load.
#include "fm/adapter.h"

#include "FlatFile.h"
#include "kernels/lora.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <set>

#if defined(__unix__) || defined(__APPLE__)
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#define FM_HAVE_MMAP 1
#endif

namespace fm {

namespace fad = fm::adapter;

std::string adapterDtypeName(fad::DType dtype) {
  switch (dtype) {
  case fad::DType::F16:
    return "f16";
  case fad::DType::Q8:
    return "q8";
  }
  return "dtype " + std::to_string(static_cast<unsigned>(dtype));
}

namespace {

using u64 = uint64_t;

// A rank above this is a corrupt file (adapters use 4 to 256).
constexpr u64 kMaxRank = 4096;
// Projection widths above this are a corrupt file, and keep every size
// product below 2^64.
constexpr u64 kMaxCols = u64(1) << 24;

format::Digest toDigest(const fad::Digest *d) {
  format::Digest out{};
  if (d)
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = d->bytes()->Get(static_cast<flatbuffers::uoffset_t>(i));
  return out;
}

std::string quoted(const flatbuffers::String *s) {
  return s ? "'" + s->str() + "'" : std::string("''");
}

// Why matrix `m` (`what` of a lora of rank `rank`) cannot be read, or "".
std::string matrixProblem(const fad::Matrix &m, const char *what, u64 rank,
                          u64 dataSize) {
  const std::string w = what;
  if (m.dtype() != fad::DType::F16 && m.dtype() != fad::DType::Q8)
    return w + " is " + adapterDtypeName(m.dtype()) + " (f16 or q8 expected)";
  if (m.rows() != rank)
    return w + " has " + std::to_string(m.rows()) + " rows, expected the rank " +
           std::to_string(rank);
  if (m.cols() == 0 || m.cols() > kMaxCols)
    return w + " has " + std::to_string(m.cols()) + " columns";
  const bool q8 = m.dtype() == fad::DType::Q8;
  if (q8 && m.group() != 32 && m.group() != 64 && m.group() != 128)
    return w + " is q8 in groups of " + std::to_string(m.group()) +
           " (32, 64 or 128 expected)";
  if (q8 && m.cols() % m.group() != 0)
    return w + " has " + std::to_string(m.cols()) +
           " columns, not a multiple of its q8 group " + std::to_string(m.group());
  const u64 bytes = kernels::loraMatrixBytes(m.rows(), m.cols(), q8,
                                             q8 ? int(m.group()) : 32);
  if (m.size() != bytes)
    return w + " has " + std::to_string(m.size()) + " bytes, but " +
           std::to_string(m.rows()) + " x " + std::to_string(m.cols()) + " " +
           adapterDtypeName(m.dtype()) + " takes " + std::to_string(bytes);
  if (m.offset() % format::kDataAlignment != 0)
    return w + " is at offset " + std::to_string(m.offset()) +
           ", not a multiple of 64";
  if (m.offset() > dataSize || m.size() > dataSize - m.offset())
    return w + " (" + std::to_string(m.size()) + " bytes at " +
           std::to_string(m.offset()) + ") is outside the data section of " +
           std::to_string(dataSize) + " bytes";
  return "";
}

} // namespace

Expected<std::unique_ptr<AdapterFile>>
AdapterFile::open(const std::string &path, const Options &options) {
#if FM_HAVE_MMAP
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Status::error(path + ": cannot open: " + std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::error(path + ": not a regular file");
  }
  std::unique_ptr<AdapterFile> a(new AdapterFile());
  a->name_ = path;
  a->size_ = static_cast<u64>(st.st_size);
  if (a->size_ > 0) {
    void *p = mmap(nullptr, a->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      return Status::error(path + ": cannot map: " + std::strerror(err));
    }
    a->base_ = static_cast<const uint8_t *>(p);
    a->mapped_ = true;
  }
  ::close(fd);
  FM_RETURN_IF_ERROR(a->verify(options));
  return a;
#else
  (void)options;
  return Status::error(path + ": loading files needs mmap (not available)");
#endif
}

Expected<std::unique_ptr<AdapterFile>>
AdapterFile::fromBuffer(const uint8_t *data, size_t size,
                        const std::string &name, const Options &options) {
  std::unique_ptr<AdapterFile> a(new AdapterFile());
  a->name_ = name;
  a->size_ = size;
  if (size > 0) {
    // FlatBuffers reads scalars in place and the kernels read the matrices
    // in place: both need the alignment a mapping gives.
    const size_t alignment = format::kDataAlignment;
    const size_t rounded = (size + alignment - 1) & ~(alignment - 1);
    void *copy = std::aligned_alloc(alignment, rounded);
    if (!copy)
      return Status::error(name + ": out of memory copying " +
                           std::to_string(size) + " bytes");
    std::memcpy(copy, data, size);
    a->base_ = static_cast<const uint8_t *>(copy);
  }
  FM_RETURN_IF_ERROR(a->verify(options));
  return a;
}

AdapterFile::~AdapterFile() {
#if FM_HAVE_MMAP
  if (mapped_) {
    munmap(const_cast<uint8_t *>(base_), size_);
    return;
  }
#endif
  std::free(const_cast<uint8_t *>(base_));
}

format::Digest AdapterFile::digest() const { return toDigest(root_->digest()); }

format::Digest AdapterFile::baseSourceDigest() const {
  return toDigest(root_->base()->source_digest());
}

int64_t AdapterFile::parameters() const {
  int64_t n = 0;
  for (const fad::Lora *l : *root_->loras())
    n += int64_t(l->a()->rows()) * l->a()->cols() +
         int64_t(l->b_t()->rows()) * l->b_t()->cols();
  return n;
}

Status AdapterFile::verify(const Options &options) {
  const std::string &n = name_;
  static const FlatFileKind kAdapter = {
      "adapter",
      format::kAdapterFileIdentifier,
      format::kFileIdentifier,
      "a model (.fmb), not an adapter (.fmba)",
      "adapter schema version",
      format::kAdapterSchemaVersion,
      "recompile it with fmc compile-adapter"};
  const Expected<u64> frame = checkFlatFrame(n, base_, size_, kAdapter);
  if (!frame)
    return frame.status();
  const u64 fbEnd = *frame;
  FM_RETURN_IF_ERROR(
      checkFlatVersion<fad::AdapterHeader>(n, base_, fbEnd, kAdapter));
  {
    flatbuffers::Verifier verifier(base_, fbEnd);
    if (!fad::VerifySizePrefixedAdapterBuffer(verifier))
      return flatFileCorrupt(n);
  }
  root_ = fad::GetSizePrefixedAdapter(base_);

  const u64 dataStart = format::alignData(fbEnd);
  dataSize_ = root_->data_size();
  if (dataStart > size_ || dataSize_ > size_ - dataStart)
    return Status::error(n + ": truncated: a data section of " +
                         std::to_string(dataSize_) + " bytes at " +
                         std::to_string(dataStart) + " but the file has " +
                         std::to_string(size_) + " bytes");
  data_ = base_ + dataStart;
  if (!root_->digest())
    return Status::error(n + ": corrupt: the adapter has no digest");
  if (options.checkDigest) {
    const size_t at =
        reinterpret_cast<const uint8_t *>(root_->digest()) - base_;
    const format::Digest actual =
        format::programDigest(base_, dataStart + dataSize_, at);
    if (actual != digest())
      return Status::error(n + ": corrupt: the digest does not match (the "
                               "file changed since fmc wrote it): it hashes "
                               "to " +
                           format::hex(actual) + ", it says " +
                           format::hex(digest()));
  }

  const fad::Base &base = *root_->base();
  if (base.family()->size() == 0)
    return Status::error(n + ": the base has no family");
  if (root_->loras()->size() == 0)
    return Status::error(n + ": the adapter has no LoRA weights");
  std::set<std::string> seen;
  for (flatbuffers::uoffset_t i = 0; i < root_->loras()->size(); ++i) {
    const fad::Lora &l = *root_->loras()->Get(i);
    const std::string where =
        n + ": lora " + std::to_string(i) + " (" + quoted(l.weight()) + "): ";
    if (l.weight()->size() == 0)
      return Status::error(where + "names no weight");
    if (!seen.insert(l.weight()->str()).second)
      return Status::error(where + "updates a weight an earlier lora updates");
    if (l.rank() == 0 || l.rank() > kMaxRank)
      return Status::error(where + "rank " + std::to_string(l.rank()) +
                           " is not in [1, " + std::to_string(kMaxRank) + "]");
    if (!std::isfinite(l.scale()) || !std::isfinite(l.alpha()))
      return Status::error(where + "scale " + std::to_string(l.scale()) +
                           " (alpha " + std::to_string(l.alpha()) +
                           ") is not finite");
    if (std::string p = matrixProblem(*l.a(), "A (lora_A)", l.rank(), dataSize_);
        !p.empty())
      return Status::error(where + p);
    if (std::string p =
            matrixProblem(*l.b_t(), "B^T (lora_B)", l.rank(), dataSize_);
        !p.empty())
      return Status::error(where + p);
  }
  return Status::ok();
}

} // namespace fm
