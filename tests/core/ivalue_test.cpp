// IValue semantics: aliasing of containers, Python equality and hashing of dict keys,
// insertion-ordered dicts, repr as Python prints values.
#include "core/ivalue.h"
#include "core/error.h"

#include <gtest/gtest.h>

using namespace torchless;

namespace {

TEST(IValue, ScalarsAndTagErrors) {
  IValue i(int64_t{3}), d(2.5), b(true), s("abc"), n;
  EXPECT_TRUE(i.isInt());
  EXPECT_EQ(i.toInt(), 3);
  EXPECT_EQ(d.toDouble(), 2.5);
  EXPECT_TRUE(b.toBool());
  EXPECT_EQ(s.toStringRef(), "abc");
  EXPECT_TRUE(n.isNone());
  try {
    (void)s.toInt();
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "expected a value of type int but got str");
  }
  EXPECT_TRUE(IValue(Tensor()).isNone());  // an undefined tensor is None
}

TEST(IValue, ListsAlias) {
  IValue a(ListImpl::create(IntType::get(), {IValue(1), IValue(2)}));
  IValue b = a;
  b.toList()->list.push_back(IValue(3));
  EXPECT_EQ(a.toList()->list.size(), 3u);
  EXPECT_TRUE(a.isSameIdentity(b));
  EXPECT_EQ(a.repr(), "[1, 2, 3]");
  EXPECT_EQ(a.type()->str(), "int[]");
}

TEST(IValue, PythonEquality) {
  EXPECT_TRUE(IValue(1).equals(IValue(1.0)));
  EXPECT_TRUE(IValue(true).equals(IValue(1)));
  EXPECT_FALSE(IValue("1").equals(IValue(1)));
  IValue t1(TupleImpl::create({IValue(1), IValue("a")}));
  IValue t2(TupleImpl::create({IValue(1), IValue("a")}));
  EXPECT_TRUE(t1.equals(t2));
  EXPECT_FALSE(t1.isSameIdentity(t2));
  EXPECT_EQ(t1.repr(), "(1, 'a')");
  EXPECT_EQ(IValue(TupleImpl::create({IValue(1)})).repr(), "(1,)");
}

TEST(IValue, DictKeepsInsertionOrder) {
  auto d = DictImpl::create(StringType::get(), IntType::get());
  d->insertOrAssign(IValue("b"), IValue(1));
  d->insertOrAssign(IValue("a"), IValue(2));
  d->insertOrAssign(IValue("b"), IValue(3));  // overwrite keeps position
  ASSERT_EQ(d->size(), 2u);
  EXPECT_EQ(d->entries()[0].first.toStringRef(), "b");
  EXPECT_EQ(d->entries()[0].second.toInt(), 3);
  EXPECT_EQ(IValue(d).repr(), "{'b': 3, 'a': 2}");
  EXPECT_TRUE(d->erase(IValue("b")));
  EXPECT_FALSE(d->erase(IValue("b")));
  EXPECT_EQ(d->find(IValue("a"))->toInt(), 2);
  // Int keys: 1 and 1.0 are the same key in Python.
  auto di = DictImpl::create(IntType::get(), StringType::get());
  di->insertOrAssign(IValue(1), IValue("x"));
  EXPECT_TRUE(di->contains(IValue(1.0)));
  // Tensor keys are by identity.
  auto dt = DictImpl::create(TensorType::get(), IntType::get());
  Tensor t = Tensor::empty({1}, ScalarType::Float);
  dt->insertOrAssign(IValue(t), IValue(1));
  EXPECT_TRUE(dt->contains(IValue(t)));
  EXPECT_FALSE(dt->contains(IValue(Tensor::empty({1}, ScalarType::Float))));
  // Lists are unhashable.
  EXPECT_THROW(dt->insertOrAssign(IValue(ListImpl::create(IntType::get())), IValue(1)), Error);
}

TEST(IValue, ReprMatchesPython) {
  EXPECT_EQ(IValue(1.0).repr(), "1.0");
  EXPECT_EQ(IValue(0.1).repr(), "0.1");
  EXPECT_EQ(IValue(1e20).repr(), "1e+20");
  EXPECT_EQ(IValue("it's").repr(), "\"it's\"");
  EXPECT_EQ(IValue("a\nb").repr(), "'a\\nb'");
  EXPECT_EQ(IValue(Device(DeviceType::CUDA, 1)).repr(), "device(type='cuda', index=1)");
  EXPECT_EQ(IValue(false).repr(), "False");
}

TEST(IValue, ObjectsBySlot) {
  auto cls = ClassType::create("__torch__.Box", false);
  cls->addAttribute("v", IntType::get());
  auto obj = Object::create(cls);
  obj->setAttr("v", IValue(5));
  EXPECT_EQ(obj->getAttr("v").toInt(), 5);
  try {
    (void)obj->getAttr("w");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "'__torch__.Box' object has no attribute 'w'");
  }
}

TEST(Device, ParsesAndRejects) {
  EXPECT_EQ(Device::parse("cpu").str(), "cpu");
  EXPECT_EQ(Device::parse("cuda:1").str(), "cuda:1");
  EXPECT_EQ(Device::parse("meta").type, DeviceType::Meta);
  EXPECT_THROW(Device::parse("tpu"), Error);
  EXPECT_THROW(Device::parse("cuda:x"), Error);
  EXPECT_THROW(Device::parse("cuda:-1"), Error);
}

TEST(ScalarType, PromotionFollowsPyTorch) {
  EXPECT_EQ(promoteTypes(ScalarType::Int, ScalarType::Float), ScalarType::Float);
  EXPECT_EQ(promoteTypes(ScalarType::Byte, ScalarType::Char), ScalarType::Short);
  EXPECT_EQ(promoteTypes(ScalarType::Bool, ScalarType::Long), ScalarType::Long);
  EXPECT_EQ(promoteTypes(ScalarType::Half, ScalarType::BFloat16), ScalarType::Float);
  EXPECT_EQ(promoteTypes(ScalarType::Float, ScalarType::ComplexHalf), ScalarType::ComplexFloat);
  EXPECT_THROW(promoteTypes(ScalarType::QInt8, ScalarType::Float), Error);
  EXPECT_EQ(elementSize(ScalarType::ComplexDouble), 16u);
  EXPECT_STREQ(toString(ScalarType::Float), "Float");
  EXPECT_STREQ(dtypeName(ScalarType::BFloat16), "bfloat16");
}

}  // namespace
