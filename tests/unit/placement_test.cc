// Placement: text form, validation, mesh coordinates and axis groups.
#include "engine/sbp/placement.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/core/error.h"

namespace twinflow::sbp {
namespace {

using Groups = std::vector<std::vector<int64_t>>;

std::string SbpErrorOf(std::string_view text) {
  try {
    ParsePlacement(text);
  } catch (const SbpError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an SbpError for '" << text << "'";
  return "";
}

TEST(PlacementTest, ParseAndPrint) {
  const Placement p = ParsePlacement("cpu:0-3 [2,2]");
  EXPECT_EQ(p.device_type(), DeviceType::kCpu);
  EXPECT_EQ(p.device_ids(), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(p.hierarchy(), (Shape{2, 2}));
  EXPECT_EQ(p.size(), 4);
  EXPECT_EQ(p.ToString(), "cpu:0-3 [2,2]");

  const Placement q = ParsePlacement("cuda:0,2,4-5 [2,2]");
  EXPECT_EQ(q.device_type(), DeviceType::kCuda);
  EXPECT_EQ(q.device_ids(), (std::vector<int64_t>{0, 2, 4, 5}));
  EXPECT_EQ(q.ToString(), "cuda:0,2,4-5 [2,2]");
  EXPECT_EQ(q.device(1).ToString(), "cuda:2");

  EXPECT_EQ(ParsePlacement("cpu:3").ToString(), "cpu:3 [1]");
  EXPECT_EQ(ParsePlacement("cpu:0-3").hierarchy(), (Shape{4}));
  EXPECT_EQ(ParsePlacement("cpu:0-3").ToString(), "cpu:0-3 [4]");
  EXPECT_EQ(ParsePlacement("cpu:0,2,4,5").ToString(), "cpu:0,2,4-5 [4]");
  EXPECT_EQ(ParsePlacement("cpu:5,4,3").ToString(), "cpu:5,4,3 [3]");  // order kept
  EXPECT_EQ(ParsePlacement("cpu:0-1,2-3 [4]").ToString(), "cpu:0-3 [4]");
  EXPECT_EQ(ParsePlacement(" cpu : 0 - 3 , 8 [ 5 ] "), ParsePlacement("cpu:0-3,8 [5]"));
  for (const char* text : {"cpu:0-3 [2,2]", "cuda:0,2,4-5 [4]", "cpu:3 [1]", "cpu:9,1-2,7 [2,2]",
                           "cpu:0-7 [2,2,2]", "cuda:10-11 [1,2]"}) {
    EXPECT_EQ(ParsePlacement(text).ToString(), text);
    EXPECT_EQ(ParsePlacement(ParsePlacement(text).ToString()), ParsePlacement(text));
  }
}

TEST(PlacementTest, Constructors) {
  const Placement p(DeviceType::kCuda, {4, 5, 6});
  EXPECT_EQ(p.hierarchy(), (Shape{3}));
  EXPECT_EQ(p.ToString(), "cuda:4-6 [3]");
  EXPECT_EQ(Placement(DeviceType::kCpu, {0, 1, 2, 3}, Shape{2, 2}),
            ParsePlacement("cpu:0-3 [2,2]"));
  EXPECT_NE(Placement(DeviceType::kCpu, {0, 1, 2, 3}, Shape{4}), ParsePlacement("cpu:0-3 [2,2]"));
  EXPECT_THROW(Placement(DeviceType::kCpu, {}), SbpError);
  EXPECT_THROW(Placement(DeviceType::kCpu, {0, 0}), SbpError);
  EXPECT_THROW(Placement(DeviceType::kCpu, {-1}), SbpError);
  EXPECT_THROW(Placement(DeviceType::kCpu, {0, 1, 2}, Shape{2, 2}), SbpError);
  EXPECT_THROW(Placement(DeviceType::kCpu, {0}, Shape{}), SbpError);
}

TEST(PlacementTest, Errors) {
  for (const char* bad : {"tpu:0-3",
                          "cpu:",
                          "cpu: [1]",
                          "cpu:3-1",
                          "cpu:0,1,1",
                          "cpu:-1",
                          "cpu:0,-2",
                          "cpu:0-3 [3,2]",
                          "cpu:0 [0]",
                          "cpu:0-3 [4,0]",
                          "",
                          "cpu",
                          "cpu0-3",
                          "cpu:0-3 [2,2",
                          "cpu:0-3 [2,2] x",
                          "cpu:0-3 []",
                          "cpu:a",
                          "cpu:0--3",
                          "cpu:0-",
                          "cpu:0,,1",
                          "cpu:0-3 [2,-2]",
                          "cpu:0 1",
                          "cpu:0-99999999999999",
                          "cpu:99999999999999999999"}) {
    EXPECT_THROW(ParsePlacement(bad), SbpError) << bad;
  }
}

TEST(PlacementTest, ErrorMessagesNameTheProblem) {
  std::string m = SbpErrorOf("cpu:0-3 [3,2]");
  EXPECT_NE(m.find("hierarchy [3,2] has 6 devices but the placement lists 4"), std::string::npos)
      << m;
  m = SbpErrorOf("cpu:0,2,2");
  EXPECT_NE(m.find("cpu:2"), std::string::npos) << m;
  EXPECT_NE(m.find("twice"), std::string::npos) << m;
  m = SbpErrorOf("tpu:0");
  EXPECT_NE(m.find("unknown device type 'tpu'"), std::string::npos) << m;
  m = SbpErrorOf("cpu:3-1");
  EXPECT_NE(m.find("reversed"), std::string::npos) << m;
  EXPECT_NE(m.find("3-1"), std::string::npos) << m;
  m = SbpErrorOf("cpu:-1");
  EXPECT_NE(m.find("negative"), std::string::npos) << m;
  m = SbpErrorOf("cpu:0 [0]");
  EXPECT_NE(m.find("extent of 0"), std::string::npos) << m;
  m = SbpErrorOf("cpu:");
  EXPECT_NE(m.find("no devices"), std::string::npos) << m;
  m = SbpErrorOf("cpu:0-3 [2,2");
  EXPECT_NE(m.find("'cpu:0-3 [2,2'"), std::string::npos) << m;
}

TEST(PlacementTest, MeshCoordinates) {
  const Placement p = ParsePlacement("cpu:0-11 [2,3,2]");
  EXPECT_EQ(p.MeshCoord(0), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(p.MeshCoord(1), (std::vector<int64_t>{0, 0, 1}));
  EXPECT_EQ(p.MeshCoord(2), (std::vector<int64_t>{0, 1, 0}));
  EXPECT_EQ(p.MeshCoord(7), (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(p.MeshCoord(11), (std::vector<int64_t>{1, 2, 1}));
  for (int64_t i = 0; i < p.size(); ++i) EXPECT_EQ(p.ParallelIndex(p.MeshCoord(i)), i);
  EXPECT_THROW(p.MeshCoord(12), SbpError);
  EXPECT_THROW(p.MeshCoord(-1), SbpError);
  EXPECT_THROW(p.ParallelIndex({0, 3, 0}), SbpError);
  EXPECT_THROW(p.ParallelIndex({0, 0}), SbpError);
}

TEST(PlacementTest, ParallelIndexOf) {
  const Placement p = ParsePlacement("cuda:4,0,7 [3]");
  EXPECT_EQ(p.ParallelIndexOf({DeviceType::kCuda, 7}), 2);
  EXPECT_EQ(p.ParallelIndexOf({DeviceType::kCuda, 4}), 0);
  EXPECT_EQ(p.ParallelIndexOf({DeviceType::kCuda, 5}), std::nullopt);
  EXPECT_EQ(p.ParallelIndexOf({DeviceType::kCpu, 4}), std::nullopt);
  EXPECT_EQ((DeviceId{DeviceType::kCpu, 3}).ToString(), "cpu:3");
  EXPECT_STREQ(DeviceTypeName(DeviceType::kCuda), "cuda");
}

TEST(PlacementTest, AxisGroups) {
  const Placement flat = ParsePlacement("cpu:0-3");
  EXPECT_EQ(flat.AxisGroups(0), (Groups{{0, 1, 2, 3}}));

  const Placement mesh = ParsePlacement("cpu:0-5 [2,3]");
  EXPECT_EQ(mesh.AxisGroups(0), (Groups{{0, 3}, {1, 4}, {2, 5}}));
  EXPECT_EQ(mesh.AxisGroups(1), (Groups{{0, 1, 2}, {3, 4, 5}}));

  const Placement cube = ParsePlacement("cpu:0-7 [2,2,2]");
  EXPECT_EQ(cube.AxisGroups(0), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  EXPECT_EQ(cube.AxisGroups(1), (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
  EXPECT_EQ(cube.AxisGroups(2), (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));

  const Placement single = ParsePlacement("cpu:0-3 [1,4]");
  EXPECT_EQ(single.AxisGroups(0), (Groups{{0}, {1}, {2}, {3}}));
  EXPECT_THROW(mesh.AxisGroups(2), SbpError);
  EXPECT_THROW(mesh.AxisGroups(-1), SbpError);
}

}  // namespace
}  // namespace twinflow::sbp
