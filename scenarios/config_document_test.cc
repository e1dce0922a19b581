#include "scenarios/config_document.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"

namespace clustersim {
namespace config_document_test {

const Schema& test_schema() {
  static const Schema schema = [] {
    Schema s("test");
    s.section("training", "training options");
    s.key({.path = "training.seq_len", .type = ValueType::kInt, .default_text = "2048", .description = "tokens",
           .min = 1});
    s.key({.path = "training.recompute", .type = ValueType::kEnum, .default_text = "none", .description = "r",
           .choices = {"none", "selective", "full"}});
    s.key({.path = "training.lr", .type = ValueType::kReal, .description = "learning rate"});
    s.key({.path = "training.buckets", .type = ValueType::kInt, .default_text = "auto", .description = "b",
           .choices = {"auto"}, .min = 1});
    s.key({.path = "training.packed", .type = ValueType::kBool, .default_text = "false", .description = "packing"});
    s.section("link", "a link");
    s.key({.path = "link.bandwidth", .type = ValueType::kBandwidth, .description = "bw", .required = true});
    s.key({.path = "link.latency", .type = ValueType::kDuration, .default_text = "1 us", .description = "lat"});
    s.key({.path = "layers", .type = ValueType::kIntList, .description = "per stage", .min = 1});
    s.section_list("groups", "node groups");
    s.key({.path = "groups[].count", .type = ValueType::kInt, .description = "nodes", .min = 1, .required = true});
    return s;
  }();
  return schema;
}

std::string error_of(const std::string& text, std::vector<Override> overrides = {}) {
  try {
    ConfigDocument::load_string(text, "s.yaml", test_schema(), overrides);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// The location an error carries as fields (InputError::location()); a default one when it carries none.
InputLocation location_of_error(const std::string& text, std::vector<Override> overrides = {}) {
  try {
    ConfigDocument::load_string(text, "s.yaml", test_schema(), overrides);
  } catch (const InputError& e) {
    return e.location().value_or(InputLocation{.file = "(none)"});
  }
  return InputLocation{.file = "(no error)"};
}

void expect_location(const InputLocation& at, const std::string& file, int line, int column, const std::string& key) {
  EXPECT_EQ(at.file, file);
  EXPECT_EQ(at.line, line);
  EXPECT_EQ(at.column, column);
  EXPECT_EQ(at.key, key);
}

TEST(ConfigDocument, ErrorsCarryTheFileLineColumnAndKeyTheirMessageNames) {
  const std::string link = "link: {bandwidth: 1 GB/s}\n";
  // An unknown key, a malformed value, a duplicate key: where the key is written.
  expect_location(location_of_error(link + "training:\n  seq_lne: 4\n"), "s.yaml", 3, 3, "training.seq_lne");
  expect_location(location_of_error(link + "training:\n  seq_len: 4k\n"), "s.yaml", 3, 3, "training.seq_len");
  expect_location(location_of_error(link + "training: {seq_len: 1, seq_len: 2}\n"), "s.yaml", 2, 24,
                  "training.seq_len");
  // A list element of a section list: its concrete key.
  expect_location(location_of_error(link + "groups: [{count: 0}]\n"), "s.yaml", 2, 11, "groups[0].count");
  // A YAML syntax error: the file and the place, no key.
  const InputLocation syntax = location_of_error(link + "training: [1\n");
  EXPECT_EQ(syntax.file, "s.yaml");
  EXPECT_GE(syntax.line, 2);
  EXPECT_EQ(syntax.key, "");
  // A --set value: its key, no file or line.
  expect_location(location_of_error(link, {{"training.seq_len", "abc"}}), "", 0, 0, "training.seq_len");
  expect_location(location_of_error(link, {{"training.seq_lne", "4"}}), "", 0, 0, "training.seq_lne");
  // A missing required key: the section that lacks it.
  expect_location(location_of_error("link: {latency: 1 us}\n"), "s.yaml", 1, 7, "link.bandwidth");
}

TEST(ConfigDocument, AnErrorAtAKeyCarriesWhereItWasWritten) {
  const auto doc = ConfigDocument::load_string("link: {bandwidth: 1 GB/s}\ntraining:\n  seq_len: 4096\n", "s.yaml",
                                               test_schema(), {{"training.lr", "0.1"}});
  const InputError written = doc.error_at("training.seq_len", "too long");
  EXPECT_EQ(std::string(written.what()), doc.where("training.seq_len") + "too long");
  ASSERT_TRUE(written.location().has_value());
  expect_location(*written.location(), "s.yaml", 3, 3, "training.seq_len");
  expect_location(doc.location_of("training.lr"), "", 0, 0, "training.lr");
  // A key the file does not set: the file, with the key.
  expect_location(doc.location_of("training.packed"), "s.yaml", 0, 0, "training.packed");
  expect_location(doc.location_of(""), "s.yaml", 0, 0, "");
}

// ConfigDocument::located: an error from a check of values, placed by the keys it names
// (InputError::about), its message as the check wrote it.
TEST(ConfigDocument, AnErrorAboutKeysIsPlacedAtTheFirstOfThemTheFileGives) {
  const auto doc = ConfigDocument::load_string("link: {bandwidth: 1 GB/s}\ntraining:\n  seq_len: 4096\n", "s.yaml",
                                               test_schema(), {{"training.lr", "0.1"}});
  // A message that opens with the key names it once.
  const InputError opening =
      doc.located(InputError("training.seq_len = 4096 is too long").about({"training.seq_len"}), "training");
  EXPECT_EQ(std::string(opening.what()), "s.yaml:3:3: training.seq_len = 4096 is too long");
  expect_location(*opening.location(), "s.yaml", 3, 3, "training.seq_len");
  // The first key is not in the file: the next one is.
  const InputError second =
      doc.located(InputError("needs packing").about({"training.packed", "training.seq_len"}), "training");
  EXPECT_EQ(std::string(second.what()), "s.yaml:3:3: training.seq_len: needs packing");
  EXPECT_EQ(second.keys(), (std::vector<std::string>{"training.packed", "training.seq_len"}));
  // A --set value.
  const InputError set = doc.located(InputError("training.lr = 0.1 is too high").about({"training.lr"}), "training");
  EXPECT_EQ(std::string(set.what()), "--set training.lr = 0.1 is too high");
  expect_location(*set.location(), "", 0, 0, "training.lr");
  // None of them in the file: the section that would hold the first, naming it.
  const InputError absent = doc.located(InputError("must be true").about({"training.packed"}), "link");
  EXPECT_EQ(std::string(absent.what()), "s.yaml:2:1: training.packed: must be true");
  expect_location(*absent.location(), "s.yaml", 2, 1, "training.packed");
  // An error about no key: the section the caller names.
  const InputError unkeyed = doc.located(InputError("the layers do not fit"), "training");
  EXPECT_EQ(std::string(unkeyed.what()), doc.where("training") + "the layers do not fit");
}

// A section a --set gives is named once: "--set groups: ", as a value a --set gives.
TEST(ConfigDocument, ASectionGivenByASetIsNamedOnce) {
  const auto doc = ConfigDocument::load_string("link: {bandwidth: 1 GB/s}\n", "s.yaml", test_schema(),
                                               {{"groups", "[{count: 2}]"}, {"training.lr", "0.1"}});
  EXPECT_EQ(doc.where("training.lr"), "--set training.lr: ");
  EXPECT_EQ(doc.where("groups"), "--set groups: ");
  EXPECT_EQ(std::string(doc.error_at("groups", "too few").what()), "--set groups: too few");
}

// In an element of a section list, a message that opens with the element's key names it with its
// list and index, as where() does.
TEST(ConfigDocument, AnErrorAboutAKeyOfAListElementNamesItsListAndIndex) {
  const auto doc = ConfigDocument::load_string("link: {bandwidth: 1 GB/s}\ngroups:\n  - {count: 2}\n  - {count: 5}\n",
                                               "s.yaml", test_schema());
  const std::vector<ConfigDocument> groups = doc.get_sections("groups");
  ASSERT_EQ(groups.size(), 2U);
  const std::string where = groups[1].where("count");  // "s.yaml:4:6: groups[1].count: "
  ASSERT_TRUE(where.ends_with("groups[1].count: ")) << where;
  const InputError opening = groups[1].located(InputError("count = 5 is odd").about({"count"}), "");
  EXPECT_EQ(std::string(opening.what()), where.substr(0, where.size() - 2) + " = 5 is odd");
  expect_location(*opening.location(), "s.yaml", 4, 6, "groups[1].count");
  const InputError other = groups[1].located(InputError("must be even").about({"count"}), "");
  EXPECT_EQ(std::string(other.what()), where + "must be even");
}

TEST(ConfigDocument, ReadsTypedValuesAndDefaults) {
  auto doc = ConfigDocument::load_string(
      "training: {seq_len: 4096}\nlink: {bandwidth: 400 Gb/s}\nlayers: [1, 2, 3]\ngroups: [{count: 2}, {count: 5}]\n",
      "s.yaml", test_schema());
  EXPECT_EQ(doc.get_int("training.seq_len"), 4096);
  EXPECT_EQ(doc.get_string("training.recompute"), "none");
  EXPECT_DOUBLE_EQ(doc.get_bandwidth("link.bandwidth").bytes_per_second(), 50e9);
  EXPECT_EQ(doc.get_duration("link.latency"), Duration::microseconds(1));
  EXPECT_EQ(doc.get_int_list("layers"), (std::vector<int64_t>{1, 2, 3}));
  auto groups = doc.get_sections("groups");
  ASSERT_EQ(groups.size(), 2U);
  EXPECT_EQ(groups[1].get_int("count"), 5);
  EXPECT_TRUE(doc.has("training.seq_len"));
  EXPECT_FALSE(doc.has("training.recompute"));
  // An integer in exponent notation; an integer key that also takes a word reads as text.
  auto exp = ConfigDocument::load_string("training: {seq_len: 5e8, buckets: 4e7}\nlink: {bandwidth: 400 Gb/s}\n",
                                         "s.yaml", test_schema());
  EXPECT_EQ(exp.get_int("training.seq_len"), 500'000'000);
  EXPECT_EQ(exp.get_string("training.buckets"), "4e7");
  EXPECT_EQ(doc.get_string("training.buckets"), "auto");
}

TEST(ConfigDocument, UnknownKeyNamesLineColumnAndSuggestion) {
  const std::string msg = error_of("link: {bandwidth: 1 GB/s}\ntraining:\n  seq_lne: 4\n");
  EXPECT_NE(msg.find("s.yaml:3:3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("training.seq_lne"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean \"seq_len\""), std::string::npos) << msg;
}

// yaml-cpp's Load reads the first document only; a second one (after ---) is an error naming the
// file and the line of its ---.
TEST(ConfigDocument, SecondDocumentIsAnErrorNamingItsLine) {
  const std::string first = "link: {bandwidth: 1 GB/s}\ntraining:\n  seq_len: 4\n";
  EXPECT_EQ(error_of(first), "");
  EXPECT_EQ(error_of("---\n" + first), "");  // an explicit start of the only document
  const int first_lines = 3;
  for (const std::string& text : {first + "---\ntraining: {seq_len: 8}\n", "---\n" + first + "---\n",
                                  first + "--- {training: {seq_len: 8}}\n"}) {
    const int marker = text.starts_with("---") ? first_lines + 2 : first_lines + 1;
    const std::string msg = error_of(text);
    EXPECT_NE(msg.find("s.yaml:" + std::to_string(marker) + ": a second YAML document"), std::string::npos)
        << text << " -> " << msg;
  }
}

TEST(ConfigDocument, BareNumberForDimensionedKeyIsAnError) {
  const std::string msg = error_of("link:\n  bandwidth: 400\n");
  EXPECT_NE(msg.find("s.yaml:2:3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("link.bandwidth"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no unit"), std::string::npos) << msg;
}

TEST(ConfigDocument, RangeTypeEnumAndRequiredErrors) {
  EXPECT_NE(error_of("link: {bandwidth: 1 GB/s}\ntraining: {seq_len: 0}").find("out of range"), std::string::npos);
  EXPECT_NE(error_of("link: {bandwidth: 1 GB/s}\ntraining: {seq_len: 1.5}").find("not an integer"),
            std::string::npos);
  EXPECT_NE(error_of("link: {bandwidth: 1 GB/s}\ntraining: {seq_len: 2.5e0}").find("not an integer"),
            std::string::npos);
  // An integer key that takes words: the message gives both.
  const std::string word = error_of("link: {bandwidth: 1 GB/s}\ntraining: {buckets: some}");
  EXPECT_NE(word.find("training.buckets: \"some\" is not valid; expected integer >= 1 or auto"), std::string::npos)
      << word;
  EXPECT_NE(error_of("link: {bandwidth: 1 GB/s}\ntraining: {buckets: 0}").find("out of range"), std::string::npos);
  // Beyond int64: out of range, named as written.
  const std::string huge = error_of("link: {bandwidth: 1 GB/s}\ntraining: {seq_len: 99999999999999999999999}");
  EXPECT_NE(huge.find("training.seq_len: 99999999999999999999999 is out of range: expected integer >= 1"),
            std::string::npos)
      << huge;
  EXPECT_NE(error_of("link: {bandwidth: 1 GB/s}\ntraining: {recompute: some}").find("none, selective, full"),
            std::string::npos);
  EXPECT_NE(error_of("link: {latency: 1 us}").find("missing required key \"link.bandwidth\""), std::string::npos);
  EXPECT_NE(error_of("link: {bandwidth: 1 GB/s}\nlink: {bandwidth: 2 GB/s}").find("duplicate key"),
            std::string::npos);
  EXPECT_NE(error_of("link: [1, 2]").find("expected a map"), std::string::npos);
  EXPECT_NE(error_of("link: {bandwidth: 1 GB/s}\ngroups: [{}]").find("groups[0].count"), std::string::npos);
  EXPECT_NE(error_of("link: {bandwidth: 1 GB/s\n").find("YAML syntax error"), std::string::npos);
  // What the parser's own wording leaves unsaid: the tab, the bracket never closed, where a
  // duplicate key was first set.
  const std::string tab = error_of("link:\n\tbandwidth: 1 GB/s\n");
  EXPECT_NE(tab.find("s.yaml:2:1: YAML syntax error: a tab in the indentation; YAML indents with spaces only"),
            std::string::npos)
      << tab;
  const std::string brace = error_of("link: {bandwidth: 1 GB/s\ntraining: {seq_len: 4}\n");
  EXPECT_NE(brace.find("s.yaml:1:7: YAML syntax error: this `{` is never closed by `}`"), std::string::npos) << brace;
  const std::string bracket = error_of("link: {bandwidth: 1 GB/s}\ngroups: [{count: 1}\n");
  EXPECT_NE(bracket.find("s.yaml:2:9: YAML syntax error: this `[` is never closed by `]`"), std::string::npos)
      << bracket;
  // A tab after the indentation, or in a comment line, is no indentation.
  EXPECT_EQ(error_of("link: {bandwidth: 1 GB/s}\t# a comment\n\t# another\n").find("tab"), std::string::npos);
  const std::string twice = error_of("link: {bandwidth: 1 GB/s}\ntraining:\n  seq_len: 4\n  seq_len: 8\n");
  EXPECT_NE(twice.find("s.yaml:4:3: duplicate key \"training.seq_len\", first set at s.yaml:3:3"), std::string::npos)
      << twice;
  // Nesting past yaml-cpp's depth guard is named as such, not as "bad file".
  const std::string deep = "link: " + std::string(3000, '[') + std::string(3000, ']') + "\n";
  EXPECT_NE(error_of(deep).find("YAML nesting deeper than yaml-cpp's limit"), std::string::npos) << error_of(deep);
  // A complex key (`? [a, b]`) is not a key name.
  const std::string complex = error_of("link: {bandwidth: 1 GB/s}\n? [a, b]\n: 3\n");
  EXPECT_NE(complex.find("s.yaml:2:3: a key must be a plain name, got a list"), std::string::npos) << complex;
  // Two commas in a flow map: an empty entry, said so.
  const std::string commas = error_of("link: {bandwidth: 1 GB/s}\ntraining: {seq_len: 4,, lr: 0.5}\n");
  EXPECT_NE(commas.find("training: an empty entry in a map (two commas in a row?)"), std::string::npos) << commas;
}

// A quoted scalar is a string in YAML: "32" is not the number 32, for integers, reals, booleans and
// list elements alike; a unit string stays a string.
TEST(ConfigDocument, QuotedNumbersAreStringsNotNumbers) {
  const std::string link = "link: {bandwidth: \"400 Gb/s\", latency: '1 us'}\n";
  EXPECT_EQ(error_of(link + "training: {seq_len: 32, lr: 0.5}\nlayers: [1, 2]\n"), "");
  const std::string quoted_int = error_of(link + "training:\n  seq_len: \"32\"\n");
  EXPECT_NE(quoted_int.find("s.yaml:3:3: training.seq_len: expected integer >= 1, got the quoted string \"32\""),
            std::string::npos)
      << quoted_int;
  const std::string single = error_of(link + "training: {seq_len: '32'}\n");
  EXPECT_NE(single.find("training.seq_len: expected integer"), std::string::npos) << single;
  const std::string tagged = error_of(link + "training: {seq_len: !!str 32}\n");
  EXPECT_NE(tagged.find("training.seq_len: expected integer >= 1, got the !!str string \"32\""), std::string::npos)
      << tagged;
  EXPECT_EQ(error_of(link + "training: {seq_len: !!int 32}\n"), "");
  const std::string quoted_real = error_of(link + "training:\n  lr: \"0.5\"\n");
  EXPECT_NE(quoted_real.find("s.yaml:3:3: training.lr: expected number, got the quoted string \"0.5\""),
            std::string::npos)
      << quoted_real;
  const std::string flag = error_of(link + "training: {packed: \"true\"}\n");
  EXPECT_NE(flag.find("training.packed: expected true or false, got the quoted string \"true\""), std::string::npos)
      << flag;
  const std::string element = error_of(link + "layers: [1, \"2\"]\n");
  EXPECT_NE(element.find("layers: expected list of integers >= 1, got the quoted string \"2\""), std::string::npos)
      << element;
  const std::string count = error_of(link + "groups: [{count: \"4\"}]\n");
  EXPECT_NE(count.find("groups[0].count: expected integer >= 1, got the quoted string \"4\""), std::string::npos)
      << count;
  // The same through --set: the value is read as YAML.
  const std::string set = error_of(link, {parse_override("training.seq_len=\"64\"")});
  EXPECT_NE(set.find("--set training.seq_len: expected integer"), std::string::npos) << set;
  EXPECT_EQ(error_of(link, {parse_override("training.seq_len=64")}), "");
}

TEST(ConfigDocument, OverridesReplaceValuesAndAreNamedInErrors) {
  auto doc = ConfigDocument::load_string("link: {bandwidth: 1 GB/s}\ntraining: {seq_len: 8}\n", "s.yaml",
                                         test_schema(), {parse_override("training.seq_len=16")});
  EXPECT_EQ(doc.get_int("training.seq_len"), 16);
  const std::string msg =
      error_of("link: {bandwidth: 1 GB/s}\n", {parse_override("training.seq_len=-1")});
  EXPECT_NE(msg.find("--set training.seq_len"), std::string::npos) << msg;
  EXPECT_THROW(parse_override("no-equals-sign"), InputError);
  const std::string unknown = error_of("link: {bandwidth: 1 GB/s}\n", {parse_override("training.bogus=1")});
  EXPECT_NE(unknown.find("unknown key \"training.bogus\""), std::string::npos) << unknown;
  // A --set that gives a section a value is named, not the file's first line.
  const std::string section = error_of("link: {bandwidth: 1 GB/s}\n", {parse_override("training=4")});
  EXPECT_NE(section.find("--set training: expected a map of keys"), std::string::npos) << section;
}

TEST(ConfigDocument, MissingKeyWithoutDefaultIsAnError) {
  auto doc = ConfigDocument::load_string("link: {bandwidth: 1 GB/s}\n", "s.yaml", test_schema());
  EXPECT_THROW(doc.get_real("training.lr"), InputError);
}

// A missing key is reported at the section it belongs in: the file's line of that section, or the
// --set that replaced the section (not the file, whose section may well have had the key).
TEST(ConfigDocument, MissingKeyNamesTheSectionThatLacksIt) {
  auto message_of = [](const std::string& text, std::vector<Override> overrides) {
    const auto doc = ConfigDocument::load_string(text, "s.yaml", test_schema(), overrides);
    try {
      doc.get_real("training.lr");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string text = "link: {bandwidth: 1 GB/s}\ntraining:\n  lr: 0.5\n";
  EXPECT_EQ(message_of(text, {}), "");
  std::string e = message_of(text, {parse_override("training={seq_len: 8}")});
  EXPECT_EQ(e.rfind("--set training: missing key \"training.lr\"", 0), 0U) << e;
  e = message_of(text, {parse_override("training=")});
  EXPECT_EQ(e.rfind("--set training: missing key \"training.lr\"", 0), 0U) << e;
  e = message_of("link: {bandwidth: 1 GB/s}\ntraining:\n  seq_len: 8\n", {});
  EXPECT_EQ(e.rfind("s.yaml:2:1: missing key \"training.lr\"", 0), 0U) << e;
  e = message_of("link: {bandwidth: 1 GB/s}\n", {});
  EXPECT_EQ(e.rfind("s.yaml: missing key \"training.lr\"", 0), 0U) << e;
}

// An error about a whole section the file has is placed at the file's line of it, even when --set
// overrides keys inside it; a section only a --set created is placed at that --set.
TEST(ConfigDocument, SectionErrorsStayAtTheFilesSection) {
  auto section_error = [](const std::string& text, std::vector<Override> overrides) {
    const auto doc = ConfigDocument::load_string(text, "s.yaml", test_schema(), overrides);
    return std::string(doc.error_at("training", "bad layout").what());
  };
  const std::string text = "link: {bandwidth: 1 GB/s}\ntraining:\n  lr: 0.5\n";
  std::string e = section_error(text, {parse_override("training.seq_len=8")});
  EXPECT_EQ(e.rfind("s.yaml:2:1: training: bad layout", 0), 0U) << e;
  e = section_error("link: {bandwidth: 1 GB/s}\n", {parse_override("training.seq_len=8")});
  EXPECT_EQ(e.rfind("--set training.seq_len: training: bad layout", 0), 0U) << e;
}

// Binary data (or UTF-16 text) is named with its line instead of a YAML syntax error.
TEST(ConfigDocument, NulByteIsBinaryData) {
  const std::string text = std::string("link: {bandwidth: 1 GB/s}\ntraining:\n  seq_len: 4") + '\0' + "\n";
  EXPECT_EQ(error_of(text), "s.yaml:3: binary data (a NUL byte) at line 3; expected a YAML text file (UTF-8)");
}

TEST(Schema, PrintsEveryKeyWithTypeAndDefault) {
  std::ostringstream out;
  test_schema().print(out);
  const std::string text = out.str();
  EXPECT_NE(text.find("training.seq_len"), std::string::npos);
  EXPECT_NE(text.find("default 2048"), std::string::npos);
  EXPECT_NE(text.find("bandwidth, e.g."), std::string::npos);
}

}  // namespace config_document_test
}  // namespace clustersim
