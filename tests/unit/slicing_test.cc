// Physical slicing: which region of the logical tensor each device holds, including uneven and
// empty parts, on 1-D, 2-D and 3-D meshes.
#include "engine/sbp/slicing.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/core/error.h"

namespace twinflow::sbp {
namespace {

using Table = std::vector<std::string>;

// Every device's region as text, by parallel index.
Table Regions(const Shape& shape, const char* layout) {
  Table table;
  for (const Region& r : PhysicalRegions(shape, ParseLayout(layout))) {
    table.push_back(r.ToString());
  }
  return table;
}

TEST(SlicingTest, OneDimensionalMesh) {
  EXPECT_EQ(Regions(Shape{7, 5}, "cpu:0-1 S(0)"), (Table{"[0:4,0:5]", "[4:7,0:5]"}));
  EXPECT_EQ(Regions(Shape{7, 5}, "cpu:0-2 S(1)"), (Table{"[0:7,0:2]", "[0:7,2:4]", "[0:7,4:5]"}));
  EXPECT_EQ(Regions(Shape{3}, "cpu:0-3 S(0)"), (Table{"[0:1]", "[1:2]", "[2:3]", "[3:3]"}));
  EXPECT_EQ(Regions(Shape{7, 5}, "cpu:0-1 B"), (Table{"[0:7,0:5]", "[0:7,0:5]"}));
  EXPECT_EQ(Regions(Shape{7, 5}, "cpu:0-1 P(max)"), (Table{"[0:7,0:5]", "[0:7,0:5]"}));
  EXPECT_EQ(Regions(Shape{}, "cpu:0-1 P"), (Table{"[]", "[]"}));
  EXPECT_EQ(Regions(Shape{0, 4}, "cpu:0-1 S(0)"), (Table{"[0:0,0:4]", "[0:0,0:4]"}));
}

TEST(SlicingTest, TwoElementsOverFourDevices) {
  const Layout layout = ParseLayout("cpu:0-3 S(0)");
  std::vector<int64_t> sizes;
  for (int64_t i = 0; i < 4; ++i) sizes.push_back(PhysicalShape(Shape{2}, layout, i).numel());
  EXPECT_EQ(sizes, (std::vector<int64_t>{1, 1, 0, 0}));
}

TEST(SlicingTest, TwoDimensionalMesh) {
  const Shape shape{7, 5};
  EXPECT_EQ(Regions(shape, "cpu:0-3 [2,2] (S(0),S(0))"),
            (Table{"[0:2,0:5]", "[2:4,0:5]", "[4:6,0:5]", "[6:7,0:5]"}));
  EXPECT_EQ(Regions(shape, "cpu:0-3 [2,2] (S(0),S(1))"),
            (Table{"[0:4,0:3]", "[0:4,3:5]", "[4:7,0:3]", "[4:7,3:5]"}));
  EXPECT_EQ(Regions(shape, "cpu:0-3 [2,2] (S(1),S(1))"),
            (Table{"[0:7,0:2]", "[0:7,2:3]", "[0:7,3:4]", "[0:7,4:5]"}));
  EXPECT_EQ(Regions(shape, "cpu:0-3 [2,2] (B,S(0))"),
            (Table{"[0:4,0:5]", "[4:7,0:5]", "[0:4,0:5]", "[4:7,0:5]"}));
  EXPECT_EQ(Regions(shape, "cpu:0-3 [2,2] (S(1),P)"),
            (Table{"[0:7,0:3]", "[0:7,0:3]", "[0:7,3:5]", "[0:7,3:5]"}));
  // Uneven mesh axes: [3] rows over 2 then columns over 3.
  EXPECT_EQ(Regions(Shape{3, 2}, "cpu:0-5 [2,3] (S(0),S(0))"),
            (Table{"[0:1,0:2]", "[1:2,0:2]", "[2:2,0:2]", "[2:3,0:2]", "[3:3,0:2]", "[3:3,0:2]"}));
}

TEST(SlicingTest, ThreeDimensionalMesh) {
  EXPECT_EQ(Regions(Shape{3, 5}, "cpu:0-7 [2,2,2] (S(0),S(1),S(1))"),
            (Table{"[0:2,0:2]", "[0:2,2:3]", "[0:2,3:4]", "[0:2,4:5]", "[2:3,0:2]", "[2:3,2:3]",
                   "[2:3,3:4]", "[2:3,4:5]"}));
  EXPECT_EQ(Regions(Shape{1, 2, 3}, "cpu:0-7 [2,2,2] (S(2),P,S(0))"),
            (Table{"[0:1,0:2,0:2]", "[1:1,0:2,0:2]", "[0:1,0:2,0:2]", "[1:1,0:2,0:2]",
                   "[0:1,0:2,2:3]", "[1:1,0:2,2:3]", "[0:1,0:2,2:3]", "[1:1,0:2,2:3]"}));
  EXPECT_EQ(Regions(Shape{2}, "cpu:0-7 [2,2,2] (S(0),S(0),S(0))"),
            (Table{"[0:1]", "[1:1]", "[1:1]", "[1:1]", "[1:2]", "[2:2]", "[2:2]", "[2:2]"}));
}

// Split-only layouts tile the tensor: the regions are disjoint and cover every element.
TEST(SlicingTest, SplitsTileTheTensor) {
  const Shape shape{5, 3, 4};
  for (const char* text : {"cpu:0-7 [2,2,2] (S(0),S(1),S(2))", "cpu:0-7 [2,4] (S(0),S(0))",
                           "cpu:0-5 [3,2] (S(2),S(0))", "cpu:0-6 S(0)"}) {
    const std::vector<Region> regions = PhysicalRegions(shape, ParseLayout(text));
    int64_t total = 0;
    for (size_t i = 0; i < regions.size(); ++i) {
      total += regions[i].numel();
      EXPECT_TRUE(Region::Full(shape).Contains(regions[i])) << text;
      for (size_t j = i + 1; j < regions.size(); ++j) {
        EXPECT_TRUE(regions[i].Intersect(regions[j]).empty()) << text << " " << i << " " << j;
      }
    }
    EXPECT_EQ(total, shape.numel()) << text;
  }
}

TEST(SlicingTest, HierarchyOverload) {
  const NdSbp nd = ParseNdSbp("(S(0),S(0))");
  EXPECT_EQ(PhysicalRegion(Shape{7, 5}, Shape{2, 2}, nd, 3).ToString(), "[6:7,0:5]");
  EXPECT_EQ(PhysicalShape(Shape{7, 5}, ParseLayout("cpu:0-3 [2,2] (S(0),S(0))"), 1), (Shape{2, 5}));
}

TEST(SlicingTest, Errors) {
  const Layout layout = ParseLayout("cpu:0-3 [2,2] (S(0),B)");
  EXPECT_THROW(PhysicalRegion(Shape{7, 5}, layout, 4), SbpError);
  EXPECT_THROW(PhysicalRegion(Shape{7, 5}, layout, -1), SbpError);
  EXPECT_THROW(PhysicalRegion(Shape{}, layout, 0), SbpError);  // S(0) of a scalar
  EXPECT_THROW(PhysicalRegion(Shape{7, 5}, Shape{4}, layout.nd_sbp, 0), SbpError);
  EXPECT_THROW(PhysicalRegions(Shape{7, 5}, ParseLayout("cpu:0-3 [4] (S(0),B)")), SbpError);
  EXPECT_THROW(PhysicalRegion(Shape{7, 5}, Shape{2, 0}, layout.nd_sbp, 0), SbpError);
}

}  // namespace
}  // namespace twinflow::sbp
