// Unit tests for the one table printer: widths, alignment, overflow, the unpadded last column.
#include "gpurun/util/table.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace gpurun {
namespace {

using Align = Column::Align;

TEST(Table, AFittedColumnIsAsWideAsItsWidestCellOrHeader) {
  Table table({Column::fitted("NAME"), Column::fitted("N", Align::right), Column::fitted("NOTE")});
  table.add_row({"ab", "1234", "x"});
  table.add_row({"abcdefg", "5", "longer note"});
  EXPECT_EQ(table.str(),
            "NAME        N  NOTE\n"
            "ab       1234  x\n"
            "abcdefg     5  longer note\n");
}

TEST(Table, ACellNeverWritesAControlCharacterToTheTerminal) {
  // A user's container label, another's GPU name: anyone's text, shown in everyone's table.
  Table table({Column::fitted("USER"), Column::fitted("GPU")});
  table.add_row({"al\x1b]0;owned\x07ice", "A100\r"});
  EXPECT_EQ(table.str(),
            "USER                   GPU\n"
            "al\\x1b]0;owned\\x07ice  A100\\x0d\n");
}

TEST(Table, AFixedColumnLetsALongerCellOverflowWithoutWideningTheOthers) {
  Table table({Column::fixed("ID", Align::right, 3), Column::fixed("USER", Align::left, 6), Column::fitted("END")});
  table.add_row({"7", "alice", "a"});
  table.add_row({"1024", "bartholomew", "b"});
  EXPECT_EQ(table.str(),
            " ID  USER    END\n"
            "  7  alice   a\n"
            "1024  bartholomew  b\n");
}

TEST(Table, MinimumWidthAndHeaderLongerThanAFixedWidth) {
  Table table({Column{"A", Align::left, 4, {}, 0}, Column::fixed("LONG HEADER", Align::right, 5), Column::fitted("Z")});
  table.add_row({"x", "12", ""});
  EXPECT_EQ(table.str(),
            "A     LONG HEADER  Z\n"
            "x        12  \n");
}

TEST(Table, TheLastColumnIsNeverPaddedAndEveryLineIsIndented) {
  Table table({Column::fitted("KEY"), Column::fitted("VALUE")}, 2);
  table.add_row({"max_util", "10%"});
  table.add_row({"docker"});  // a missing cell is empty
  EXPECT_EQ(table.str(),
            "  KEY       VALUE\n"
            "  max_util  10%\n"
            "  docker    \n");
}

TEST(Table, ALastColumnAlignedRightKeepsItsWidth) {
  Table table({Column::fitted("NODE"), Column::fixed("GPUS USED", Column::Align::right, 9)});
  table.add_row({"n1", "2/8"});
  EXPECT_EQ(table.str(), "NODE  GPUS USED\nn1          2/8\n");
}

TEST(Table, WithoutRowsItIsTheHeaderAlone) {
  EXPECT_EQ(Table({Column::fitted("NAME"), Column::fitted("STATUS")}).str(), "NAME  STATUS\n");
}

TEST(Table, MoreCellsThanColumnsIsAProgrammingError) {
  Table table({Column::fitted("ONLY")});
  EXPECT_THROW(table.add_row({"a", "b"}), std::logic_error);
}

TEST(Table, FittingCutsTheColumnsThatGiveWayInTheOrderGiven) {
  Table table({Column::fitted("ID", Align::right), Column::shrinkable("NAME", 6), Column::shrinkable("NOTE", 5)});
  table.add_row({"1", "a rather long name", "and a long note too"});
  const std::string natural = table.str();
  EXPECT_EQ(table.natural_width(), 43u);
  table.fit(30, {2, 1});  // the note first
  EXPECT_EQ(table.str(),
            "ID  NAME                NOTE\n"
            " 1  a rather long name  and a…\n");
  table.fit(20);  // left to right: the name, then the note
  EXPECT_EQ(table.str(),
            "ID  NAME    NOTE\n"
            " 1  a rat…  and a l…\n");
  table.fit(200);
  EXPECT_EQ(table.str(), natural);
}

TEST(Table, APaintDressesTheLastCellAfterItIsCut) {
  Table table({Column::fitted("A"), Column::shrinkable("STATE", 5)});
  table.add_row({"x", "busy: alice 97%"}, [](const std::string& cell) { return "<" + cell + ">"; });
  table.fit(10);
  EXPECT_EQ(table.str(), "A  STATE\nx  <busy: …>\n");
}

TEST(CutToWidth, CountsCodePointsAndEndsACutWithAnEllipsis) {
  EXPECT_EQ(display_width("naïve"), 5u);
  EXPECT_EQ(cut_to_width("naïve", 5), "naïve");
  EXPECT_EQ(cut_to_width("naïve", 4), "naï…");
  EXPECT_EQ(cut_to_width("abc", 1), "…");
  EXPECT_EQ(cut_to_width("abc", 0), "");
}

// A bare process's name is its command line, in any script: a wide character takes two columns,
// and the columns after it stayed one short of it each.
TEST(CutToWidth, AWideCharacterTakesTwoColumnsAndACombiningMarkNone) {
  EXPECT_EQ(display_width("训练.py"), 7u);
  EXPECT_EQ(display_width("ｗｉｄｅ"), 8u);
  EXPECT_EQ(display_width("e\u0301"), 1u);  // é as e and a combining acute
  EXPECT_EQ(cut_to_width("训练模型", 5), "训练…");
  EXPECT_EQ(cut_to_width("训练模型", 6), "训练…");  // never half of 模
  Table table({Column::fitted("NAME"), Column::fitted("USER")});
  table.add_row({"训练", "bob"});
  table.add_row({"train", "carol"});
  EXPECT_EQ(table.str(), "NAME   USER\n训练   bob\ntrain  carol\n");
}

}  // namespace
}  // namespace gpurun
