// Datasets for `onyx parity`: a folder of samples, each a NAME.npz file (np.savez) or a
// NAME/ folder of .npy files, with arrays keyed by input or output name.
#pragma once
#include <string>
#include <vector>

#include "format/npz.h"

namespace onyx::cli {

/// One sample of a dataset folder.
struct SampleFile {
  std::string name;  ///< file name without ".npz", or the folder's name
  std::string path;
  bool is_npz = true;
};

/// Lists the samples of `dir` in natural order (sample_2 before sample_10). Other files
/// (a README, reference.json) are ignored. Throws onyx::Error naming `role` ("--inputs")
/// when `dir` is not a folder, holds no sample, or names one sample twice (a.npz and a/).
std::vector<SampleFile> list_dataset(const std::string& dir, const std::string& role);

/// Reads every array of a sample (deflated .npz entries through zlib).
std::vector<format::NpzArray> load_sample(const SampleFile& s);

/// The key an array for graph value `name` has in a dataset: `name` with every character
/// other than letters, digits, '-', '_' and '.' replaced by '_' (as `onyx run` names files).
std::string array_key(const std::string& name);

/// "a" < "a2" < "a10" < "b": digit runs compare as numbers.
bool natural_less(const std::string& a, const std::string& b);

}  // namespace onyx::cli
