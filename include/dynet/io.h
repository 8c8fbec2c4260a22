// Model files: DyNet's text format (TextFileSaver / TextFileLoader) and safetensors.
//
// Text format (byte-compatible with DyNet 2.x): one record per parameter, a header line
//   #Parameter# /name {d0,d1} <bytes> ZERO_GRAD|FULL_GRAD        (or #LookupParameter#, dims = row dims then rows)
// followed by a values line and, for FULL_GRAD, a gradients line. Every float is printed as "%+.8e"
// followed by one space (16 bytes), column-major; each line ends with '\n'. <bytes> is the size of the
// data lines: size*16+1 (ZERO_GRAD) or 2*(size*16+1) (FULL_GRAD). A header without the last token (older
// DyNet files) has both lines. Saved values include the lazy weight-decay scale.
//
// Every save replaces the file atomically (temporary file in the same directory, fsync, rename): an
// error mid-save leaves the previous file intact. The temporary of a save to dir/name is
// dir/.name.dynet-unfinished-save-<pid>-...; one left by a process killed mid-save is removed by the
// next save to the same file. Every load parses and checks the whole record set
// into buffers before assigning anything: a truncated, corrupt or mismatched file throws and leaves
// the parameters unchanged.
#pragma once

#include <string>

#include "dynet/model.h"

namespace dynet {

namespace io_detail {
struct TextRecord;
}

class Saver {
 public:
  virtual ~Saver() = default;
  virtual void save(const ParameterCollection& model, const std::string& key = "") = 0;
  virtual void save(const Parameter& param, const std::string& key = "") = 0;
  virtual void save(const LookupParameter& param, const std::string& key = "") = 0;
};

class Loader {
 public:
  virtual ~Loader() = default;
  virtual void populate(ParameterCollection& model, const std::string& key = "") = 0;
  virtual void populate(Parameter& param, const std::string& key = "") = 0;
  virtual void populate(LookupParameter& lookup_param, const std::string& key = "") = 0;
  virtual Parameter load_param(ParameterCollection& model, const std::string& key) = 0;
  virtual LookupParameter load_lookup_param(ParameterCollection& model, const std::string& key) = 0;
};

// append=false: the first save() replaces the file (DyNet truncated it already in the constructor;
// here the old file survives until a save succeeds). Later save() calls on the same saver append.
class TextFileSaver : public Saver {
 public:
  explicit TextFileSaver(const std::string& filename, bool append = false);
  // Records are named key + the parameter's name relative to the collection (key must start with
  // '/'), or the full names when key is empty. Parameters are written before lookup parameters.
  void save(const ParameterCollection& model, const std::string& key = "") override;
  // One record named key, or the parameter's full name when key is empty.
  void save(const Parameter& param, const std::string& key = "") override;
  void save(const LookupParameter& param, const std::string& key = "") override;

 private:
  void write_records(const io_detail::TextRecord* records, size_t n);

  std::string filename_;
  bool append_;
  bool wrote_once_ = false;
};

class TextFileLoader : public Loader {
 public:
  explicit TextFileLoader(const std::string& filename);
  // Assigns the records whose names start with key + "/" (all records when key is empty) to the
  // model's parameters and lookup parameters in order (one counter for each kind); dims must match
  // and the counts must equal the model's.
  void populate(ParameterCollection& model, const std::string& key = "") override;
  // The first record of the right kind named exactly key (the parameter's full name when key is empty).
  void populate(Parameter& param, const std::string& key = "") override;
  void populate(LookupParameter& lookup_param, const std::string& key = "") override;
  // Adds a new parameter to model with the record's dims and values; it keeps the record's name.
  Parameter load_param(ParameterCollection& model, const std::string& key) override;
  LookupParameter load_lookup_param(ParameterCollection& model, const std::string& key) override;

 private:
  std::string filename_;
};

// DyNet 1.x-style helpers: the whole collection with TextFileSaver/TextFileLoader and an empty key.
void save_dynet_model(const std::string& filename, ParameterCollection* model);
void load_dynet_model(const std::string& filename, ParameterCollection* model);

// safetensors (https://github.com/huggingface/safetensors): an 8-byte little-endian header length, a
// JSON header {"name": {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}, ...,
// "__metadata__": {...}}, then the raw little-endian data. Keys are the parameters' full names.
// Tensors are stored the way numpy shows them, so torch/numpy readers get DyNet's meaning directly:
// a parameter with dims {d0,d1,...} is shape [d0,d1,...] in row-major (C) order (element (i,j) of a
// {rows,cols} matrix is W(i,j), i.e. the data are transposed from DyNet's column-major memory); a
// lookup parameter with n rows of dims {d0,...} is shape [n,d0,...] (row r = lookup r).
// Only values are stored (no gradients, no weight-decay scale: values are saved × that scale).
void save_safetensors(const std::string& filename, const ParameterCollection& model);
// Loads every parameter and lookup parameter of model from the tensor with its full name; each must
// be present as F32 with the matching shape. Tensors in the file that the model lacks are ignored
// (so a subcollection can be loaded from a whole-model file). Gradients of loaded parameters are cleared.
void load_safetensors(const std::string& filename, ParameterCollection& model);

}  // namespace dynet
