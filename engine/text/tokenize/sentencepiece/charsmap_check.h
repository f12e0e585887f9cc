// A sentencepiece model carries its normaliser as a "precompiled character map": a darts-clone
// double-array trie followed by the replacement strings. sentencepiece walks that trie without any bounds
// check, so a damaged or hostile spiece.model makes it read outside the map while encoding a prompt (a
// crash, found by fuzzing). These checks walk every path the normaliser can take, for any input byte,
// before the model is used. Plain C++, no sentencepiece: shared by the module and the tests.
#pragma once
#include <string>
#include <string_view>

namespace studio::text {

// The bytes of field `number` (a length-delimited field) in a serialised protobuf message; the last one
// when it repeats, empty when absent. Throws std::runtime_error if the message is not well formed.
std::string_view proto_bytes_field(std::string_view message, int number);

// Why a precompiled character map would make the normaliser read outside it; empty when it is sound (or
// empty: no map means no normalisation).
std::string charsmap_problem(std::string_view blob);

// The same for a serialised ModelProto (its normalizer_spec and denormalizer_spec): empty when sound,
// else a sentence that names the map and what is wrong.
std::string model_charsmap_problem(std::string_view model_proto);

}  // namespace studio::text
