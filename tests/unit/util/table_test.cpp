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
  Table table({Column{"A", Align::left, 4, {}}, Column::fixed("LONG HEADER", Align::right, 5), Column::fitted("Z")});
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

}  // namespace
}  // namespace gpurun
