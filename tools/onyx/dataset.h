// Datasets for `onyx parity`: a folder of samples, each a NAME.npz file (np.savez) or a
// NAME/ folder of values in the forms `onyx run` writes, keyed by input or output name.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "format/npz.h"
#include "ir/graph.h"
#include "onyx/tensor.h"

namespace onyx::cli {

/// One sample of a dataset folder.
struct SampleFile {
  std::string name;  ///< file name without ".npz", or the folder's name
  std::string path;
  bool is_npz = true;
};

/// Lists the samples of `dir` in natural order (sample_2 before sample_10): NAME.npz
/// files and NAME/ folders that hold a .npy, .pb or .none file or a folder of .npy or .pb
/// files. Other files (a README, reference.json) are ignored. Throws onyx::Error naming `role` ("--inputs")
/// when `dir` is not a folder, holds no sample, or names one sample twice (a.npz and a/).
std::vector<SampleFile> list_dataset(const std::string& dir, const std::string& role);

/// One value of a sample: a tensor, a sequence or an empty optional, under its key.
struct SampleValue {
  std::string name;  ///< the array key, or the file name without its suffix
  Value value;
};

/// The declared type of the graph value a sample key names (by name or array_key), or
/// nullptr when the key names none.
using TypeOf = std::function<const ir::TypeInfo*(const std::string& key)>;

/// Reads every value of a sample. A NAME.npz holds tensors (array K) and sequences
/// (arrays K/0, K/1, ...); deflated entries go through zlib. A NAME/ folder holds K.npy,
/// K.pb (a TensorProto, SequenceProto or OptionalProto as the declared type says), K/
/// (a sequence: 0.npy, 1.npy, ...) and K.none (an empty optional), read by
/// format::read_value_path; other files are ignored. Raw bits of a dtype numpy lacks are
/// read as the declared dtype. Throws onyx::Error naming the sample and the file.
std::vector<SampleValue> load_sample(const SampleFile& s, const TypeOf& type_of);

/// Values from the arrays of a .npz: array K is a tensor, arrays K/0, K/1, ... (numbered
/// from 0 without a gap) the items of sequence K. `what` names the archive in errors.
std::vector<SampleValue> npz_values(std::vector<format::NpzArray> arrays, const TypeOf& type_of,
                                    const std::string& what);

/// The key an array for graph value `name` has in a dataset: `name` with every character
/// other than letters, digits, '-', '_' and '.' replaced by '_' (as `onyx run` names files).
std::string array_key(const std::string& name);

/// "a" < "a2" < "a10" < "b": digit runs compare as numbers.
bool natural_less(const std::string& a, const std::string& b);

}  // namespace onyx::cli
