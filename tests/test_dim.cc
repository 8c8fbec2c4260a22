#include <gtest/gtest.h>

#include <sstream>

#include "dynet/dim.h"

using dynet::Dim;

TEST(Dim, SizesAndAccessors) {
  Dim d({3, 4}, 10);
  EXPECT_EQ(d.size(), 120u);
  EXPECT_EQ(d.batch_size(), 12u);
  EXPECT_EQ(d.rows(), 3u);
  EXPECT_EQ(d.cols(), 4u);
  EXPECT_EQ(d[5], 1u);
  EXPECT_EQ(Dim({5}).cols(), 1u);
  EXPECT_EQ(d.single_batch(), Dim({3, 4}));
  EXPECT_EQ(Dim({3, 1, 1}).truncate().nd, 1u);
  EXPECT_EQ(Dim({3, 4}).transpose(), Dim({4, 3}));
  EXPECT_EQ(Dim({3}).transpose(), Dim({1, 3}));
}

TEST(Dim, TextRoundTrip) {
  Dim d({3, 4}, 10);
  EXPECT_EQ(d.str(), "{3,4X10}");
  EXPECT_EQ(Dim({2, 5}).str(), "{2,5}");
  std::istringstream is("{3,4X10} {7}");
  Dim a, b;
  is >> a >> b;
  EXPECT_EQ(a, d);
  EXPECT_EQ(b, Dim({7}));
  std::istringstream bad("[3]");
  Dim c;
  bad >> c;
  EXPECT_TRUE(bad.fail());
}

TEST(Dim, EditingDims) {
  Dim d({2, 3, 4});
  d.delete_dim(1);
  EXPECT_EQ(d, Dim({2, 4}));
  d.insert_dim(0, 7);
  EXPECT_EQ(d, Dim({7, 2, 4}));
  d.add_dim(5);
  EXPECT_EQ(d.nd, 4u);
  EXPECT_THROW(Dim({1, 2, 3, 4, 5, 6, 7, 8}), std::invalid_argument);
  EXPECT_THROW(Dim({1, 2, 3}).transpose(), std::invalid_argument);
}
