// The restricted unpickler on hand-built pickles.
#include "serialize/unpickler.h"
#include "serialize_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

namespace torchless {
namespace {

using test::Pickle;

/// Storage records served from a map; counts reads so tests can check sharing.
struct Records {
  std::map<std::string, std::string> bytes;
  int reads = 0;
  StorageReader reader() {
    return [this](const std::string& key) {
      ++reads;
      auto it = bytes.find(key);
      if (it == bytes.end()) throw Error("missing record 'data/" + key + "'");
      auto owned = std::make_shared<std::string>(it->second);
      RecordData r;
      r.data = reinterpret_cast<const std::byte*>(owned->data());
      r.size = owned->size();
      r.owner = owned;
      return r;
    };
  }
};

UnpickleResult run(const Pickle& p, Records* rec = nullptr, UnpicklerOptions opt = {}) {
  opt.place = "test.pt: record 'data.pkl'";
  if (rec) opt.readStorage = rec->reader();
  return unpickle(p.bytes().data(), p.bytes().size(), opt);
}

std::string errorOf(const Pickle& p, Records* rec = nullptr, UnpicklerOptions opt = {}) {
  try {
    run(p, rec, std::move(opt));
  } catch (const Error& e) {
    return e.firstLine();
  }
  return "";
}

std::string floats(std::initializer_list<float> v) {
  std::vector<float> f(v);
  return std::string(reinterpret_cast<const char*>(f.data()), f.size() * sizeof(float));
}

TEST(Unpickler, Scalars) {
  Pickle p;
  p.mark().integer(7).integer(300).integer(-5).integer(70000).integer(int64_t{1} << 40);
  p.real(1.5).real(NAN).real(-INFINITY).boolean(true).boolean(false).none().str("héllo");
  p.tuple().stop();
  auto r = run(p);
  const auto& e = r.value.toTuple()->elements;
  ASSERT_EQ(e.size(), 12u);
  EXPECT_EQ(e[0].toInt(), 7);
  EXPECT_EQ(e[1].toInt(), 300);
  EXPECT_EQ(e[2].toInt(), -5);
  EXPECT_EQ(e[3].toInt(), 70000);
  EXPECT_EQ(e[4].toInt(), int64_t{1} << 40);
  EXPECT_EQ(e[5].toDouble(), 1.5);
  EXPECT_TRUE(std::isnan(e[6].toDouble()));
  EXPECT_EQ(e[7].toDouble(), -INFINITY);
  EXPECT_TRUE(e[8].toBool());
  EXPECT_FALSE(e[9].toBool());
  EXPECT_TRUE(e[10].isNone());
  EXPECT_EQ(e[11].toStringRef(), "héllo");
}

TEST(Unpickler, ListsDictsAndTags) {
  Pickle p;
  p.mark();
  // build_intlist([1, 2])
  p.global("torch.jit._pickle", "build_intlist")
      .mark()
      .emptyList()
      .mark()
      .integer(1)
      .integer(2)
      .appends()
      .tuple()
      .reduce();
  // restore_type_tag({'a': ['x']}, 'Dict[str, List[str]]')
  p.global("torch.jit._pickle", "restore_type_tag")
      .mark()
      .emptyDict()
      .mark()
      .str("a")
      .emptyList()
      .mark()
      .str("x")
      .appends()
      .setitems()
      .str("Dict[str, List[str]]")
      .tuple()
      .reduce();
  // untagged LIST and DICT
  p.mark().integer(1).str("y").op('l');
  p.mark().str("k").integer(2).op('d');
  p.tuple().stop();
  auto r = run(p);
  const auto& e = r.value.toTuple()->elements;
  EXPECT_EQ(e[0].toIntVector(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(e[0].type()->str(), "int[]");
  EXPECT_EQ(e[1].type()->annotationStr(), "Dict[str, List[str]]");
  EXPECT_EQ(e[1].toDict()->find(IValue("a"))->toList()->list[0].toStringRef(), "x");
  EXPECT_EQ(e[2].toList()->list.size(), 2u);
  EXPECT_EQ(e[3].toDict()->find(IValue("k"))->toInt(), 2);
}

TEST(Unpickler, DeviceComplexOrderedDict) {
  Pickle p;
  p.mark();
  p.global("torch", "device").str("cuda:1").op('\x85').reduce();
  p.global("builtins", "complex").real(1.0).real(-2.0).op('\x86').reduce();
  p.global("collections", "OrderedDict").emptyTuple().reduce();
  p.tuple().stop();
  auto r = run(p);
  const auto& e = r.value.toTuple()->elements;
  EXPECT_EQ(e[0].toDevice().str(), "cuda:1");
  EXPECT_EQ(e[1].toComplexDouble(), std::complex<double>(1.0, -2.0));
  EXPECT_TRUE(e[2].isNone());
}

TEST(Unpickler, SharedStorageViewsAndSharedTensors) {
  Records rec;
  rec.bytes["0"] = floats({0, 1, 2, 3, 4, 5});
  Pickle p;
  p.mark();
  p.tensor("0", 6, 1, {2}, {2}).put(1);  // view [1, 3]
  p.global("torch._utils", "_rebuild_tensor_v2").mark();
  p.mark()
      .str("storage")
      .global("torch", "FloatStorage")
      .str("0")
      .str("cpu")
      .integer(6)
      .tuple()
      .persid();
  p.integer(0).ints({2, 3}).ints({3, 1}).boolean(true).none().tuple().reduce();
  p.get(1);  // the same tensor again
  p.tuple().stop();
  auto r = run(p, &rec);
  EXPECT_EQ(rec.reads, 1);
  ASSERT_EQ(r.storages.size(), 1u);
  const auto& e = r.value.toTuple()->elements;
  Tensor a = e[0].toTensor(), b = e[1].toTensor(), c = e[2].toTensor();
  EXPECT_TRUE(a.storage().isAlias(b.storage()));
  EXPECT_TRUE(a.is(c));
  EXPECT_EQ(a.doubleAt(1), 3.0);
  EXPECT_EQ(b.sizes(), (IntList{2, 3}));
  EXPECT_TRUE(b.requiresGrad());
  EXPECT_EQ(b.doubleAt(5), 5.0);
  // The storage wraps the record's bytes: no copy.
  EXPECT_EQ(a.storage().data(), r.storages[0].storage.data());
}

TEST(Unpickler, LongMemo) {
  Pickle p;
  p.str("v").put(70000).get(70000).op('\x86').stop();
  auto r = run(p);
  EXPECT_EQ(r.value.toTuple()->elements[1].toStringRef(), "v");
}

TEST(Unpickler, QuantizedPerTensorAndPerChannel) {
  Records rec;
  rec.bytes["0"] = std::string("\x01\x02\x03\x04", 4);
  rec.bytes["1"] = std::string(16, '\0');  // two float64 scales
  rec.bytes["2"] = std::string(16, '\0');  // two int64 zero points
  Pickle p;
  p.mark();
  p.global("torch._utils", "_rebuild_qtensor").mark();
  p.mark()
      .str("storage")
      .global("torch", "QUInt8Storage")
      .str("0")
      .str("cpu")
      .integer(4)
      .tuple()
      .persid();
  p.integer(0).ints({4}).ints({1});
  p.mark().global("torch", "per_tensor_affine").real(0.5).integer(3).tuple();
  p.boolean(false).none().tuple().reduce();
  p.global("torch._utils", "_rebuild_qtensor").mark();
  p.mark()
      .str("storage")
      .global("torch", "QInt8Storage")
      .str("0")
      .str("cpu")
      .integer(4)
      .tuple()
      .persid();
  p.integer(0).ints({2, 2}).ints({2, 1});
  p.mark().global("torch", "per_channel_affine");
  p.tensor("1", 2, 0, {2}, {1}, "DoubleStorage").tensor("2", 2, 0, {2}, {1}, "LongStorage");
  p.integer(0).tuple();
  p.boolean(false).none().tuple().reduce();
  p.tuple().stop();
  auto r = run(p, &rec);
  Tensor a = r.value.toTuple()->elements[0].toTensor();
  Tensor b = r.value.toTuple()->elements[1].toTensor();
  ASSERT_TRUE(a.isQuantized());
  EXPECT_EQ(a.dtype(), ScalarType::QUInt8);
  EXPECT_EQ(a.quantizer()->scale, 0.5);
  EXPECT_EQ(a.quantizer()->zeroPoint, 3);
  ASSERT_TRUE(b.isQuantized());
  EXPECT_EQ(b.quantizer()->scheme, QuantizerInfo::Scheme::PerChannelAffine);
  EXPECT_EQ(b.quantizer()->axis, 0);
  EXPECT_EQ(Tensor(b.quantizer()->scales).dtype(), ScalarType::Double);
}

TEST(Unpickler, SparseIsRejected) {
  Pickle p;
  p.global("torch._utils", "_rebuild_sparse_tensor").mark().integer(1).tuple().reduce().stop();
  EXPECT_NE(errorOf(p).find("sparse tensors are not supported"), std::string::npos);
}

TEST(Unpickler, PlaceholderClassesFromState) {
  Pickle p;
  p.beginObject("__torch__", "Outer").str("x").integer(3).str("training").boolean(true);
  p.str("inner").beginObject("__torch__.a", "Box").str("v").str("s").endObject();
  p.endObject().stop();
  auto r = run(p);
  auto o = r.value.toObject();
  EXPECT_EQ(o->type->name(), "__torch__.Outer");
  EXPECT_TRUE(o->type->isModule());
  ASSERT_EQ(o->type->attributes().size(), 3u);
  EXPECT_EQ(o->type->attributes()[0].name, "x");
  EXPECT_EQ(o->type->attributes()[0].type->str(), "int");
  auto box = o->getAttr("inner").toObject();
  EXPECT_EQ(box->type->name(), "__torch__.a.Box");
  EXPECT_FALSE(box->type->isModule());
  EXPECT_EQ(box->getAttr("v").toStringRef(), "s");
}

TEST(Unpickler, ResolvedClassTakesDeclaredSlots) {
  auto cls = ClassType::create("__torch__.M", true);
  cls->addAttribute("b", IntType::get());
  cls->addAttribute("a", IntType::get());
  UnpicklerOptions opt;
  opt.resolveClass = [&](const std::string& q) { return q == "__torch__.M" ? cls : nullptr; };
  Pickle p;
  p.beginObject("__torch__", "M").str("a").integer(1).str("b").integer(2).str("extra").integer(3);
  p.endObject().stop();
  auto o = run(p, nullptr, opt).value.toObject();
  EXPECT_EQ(o->type, cls);
  EXPECT_EQ(o->slots[0].toInt(), 2);
  EXPECT_EQ(o->slots[1].toInt(), 1);

  Pickle missing;
  missing.beginObject("__torch__", "M").str("a").integer(1).endObject().stop();
  EXPECT_NE(errorOf(missing, nullptr, opt).find("has no value for attribute 'b'"),
            std::string::npos);
}

TEST(Unpickler, SetStateIsDeferred) {
  Pickle p;
  p.global("__torch__", "S").emptyTuple().newobj();
  p.mark().integer(7).boolean(true).tuple().build().stop();
  auto r = run(p);
  ASSERT_EQ(r.pendingSetState.size(), 1u);
  EXPECT_EQ(r.pendingSetState[0].object.get(), r.value.toObject().get());
  EXPECT_EQ(r.pendingSetState[0].state.toTuple()->elements[0].toInt(), 7);
}

TEST(Unpickler, EnumPlaceholderAndResolved) {
  Pickle p;
  p.global("__torch__", "Color").integer(2).reduce().stop();
  auto r = run(p);
  EXPECT_EQ(r.value.toEnum()->type->name(), "__torch__.Color");
  EXPECT_EQ(r.value.toEnum()->value.toInt(), 2);

  auto et = std::make_shared<EnumType>(
      "__torch__.Color", IntType::get(), std::vector<std::string>{"RED", "GREEN"},
      std::vector<std::shared_ptr<IValue>>{std::make_shared<IValue>(int64_t{1}),
                                           std::make_shared<IValue>(int64_t{2})});
  UnpicklerOptions opt;
  opt.resolveType = [&](const std::string& q) -> TypePtr {
    return q == "__torch__.Color" ? et : nullptr;
  };
  EXPECT_EQ(run(p, nullptr, opt).value.toEnum()->name, "GREEN");
}

// ---- rejected pickles ------------------------------------------------------------------------

struct BadCase {
  const char* name;
  std::string bytes;
  const char* expected;
};

TEST(UnpicklerBad, Rejections) {
  std::vector<BadCase> cases = {
      {"wrong protocol", "\x80\x03N.", "unsupported pickle protocol 3"},
      {"no STOP", "\x80\x02N", "without a STOP"},
      {"empty", "", "without a STOP"},
      {"two values", "\x80\x02NN.", "2 values on the stack"},
      {"MARK underflow", "\x80\x02t.", "needs a MARK"},
      {"pop below mark", "\x80\x02N(\x85.", "below the last MARK"},
      {"LONG1 length", "\x80\x02\x8a\x04\x01\x02\x03\x04.", "LONG1 of 4 bytes"},
      {"invalid utf8", std::string("\x80\x02X\x02\x00\x00\x00\xc3\x28.", 10), "not valid UTF-8"},
      {"string past end",
       std::string("\x80\x02X\xff\xff\xff\x00"
                   "ab",
                   10),
       "truncated pickle"},
      {"global without newline",
       "\x80\x02"
       "cos",
       "no terminating newline"},
      {"global bad char",
       "\x80\x02"
       "cos;\nsystem\n",
       "only [A-Za-z0-9_.]"},
      {"forbidden torch global",
       "\x80\x02"
       "ctorch\nload\n.",
       "forbidden global 'torch.load'"},
      {"unknown storage",
       "\x80\x02"
       "ctorch\nFooStorage\n.",
       "unknown storage type"},
      {"reduce non-callable", "\x80\x02K\x01)R.", "not a callable GLOBAL"},
      {"build non-object", "\x80\x02K\x01}b.", "BUILD on a int"},
      {"newobj non-class",
       "\x80\x02"
       "cbuiltins\ncomplex\n)\x81.",
       "only __torch__ classes"},
      {"persid not tuple", "\x80\x02K\x01Q.", "persistent id is not"},
      {"unhashable key", "\x80\x02}(]K\x01u.", "unhashable key"},
      {"odd setitems", "\x80\x02}(K\x01u.", "odd number"},
      {"global as value", "\x80\x02](ctorch\ndevice\ne.", "GLOBAL or storage as a plain value"},
      {"result is global",
       "\x80\x02"
       "ctorch\ndevice\n.",
       "result is a GLOBAL"},
  };
  {
    Pickle p;
    p.mark().str("storage").global("torch", "FloatStorage").str("0").str("cpu").integer(2);
    p.tuple().persid().stop();
    cases.push_back({"persid without reader", p.bytes(), "no storage records"});
  }
  {
    Pickle p;
    p.emptyList().put(0).mark().get(0).appends().stop();
    cases.push_back({"appends into self", p.bytes(), "inside itself"});
  }
  {
    Pickle p;
    p.emptyList().put(0).op('\x85').get(0).mark().integer(1).appends().stop();
    cases.push_back({"modify after use", p.bytes(), "already part of another value"});
  }
  {
    Pickle p;
    p.global("torch.jit._pickle", "restore_type_tag").emptyList().str("List[").op('\x86');
    p.reduce().stop();
    cases.push_back({"bad type tag", p.bytes(), "bad type tag 'List['"});
  }
  {
    Pickle p;
    p.global("torch.jit._pickle", "restore_type_tag").emptyList().str("int").op('\x86');
    p.reduce().stop();
    cases.push_back({"tag kind mismatch", p.bytes(), "type tag 'int' on a list"});
  }
  {
    Pickle p;
    p.global("torch.jit._pickle", "build_intlist").emptyList().mark().str("a").appends();
    p.op('\x85').reduce().stop();
    cases.push_back({"intlist with str", p.bytes(), "element 0 is a str"});
  }
  {
    Pickle p;
    p.mark().integer(1);
    for (int i = 0; i < 10; ++i) p.op('\x85');
    p.tuple().stop();
    cases.push_back({"ok control", p.bytes(), ""});
  }
  for (const auto& c : cases) {
    std::string msg;
    try {
      UnpicklerOptions opt;
      opt.place = "p";
      unpickle(c.bytes.data(), c.bytes.size(), opt);
    } catch (const Error& e) {
      msg = e.firstLine();
    }
    if (*c.expected == '\0') {
      EXPECT_EQ(msg, "") << c.name;
      continue;
    }
    EXPECT_NE(msg.find(c.expected), std::string::npos)
        << c.name << ": got '" << msg << "', expected '" << c.expected << "'";
  }
}

TEST(UnpicklerBad, DeepNestingIsBounded) {
  std::string b = "\x80\x02N";
  for (int i = 0; i < 100000; ++i) b += '\x85';  // TUPLE1, 100k deep
  b += '.';
  UnpicklerOptions opt;
  try {
    unpickle(b.data(), b.size(), opt);
    FAIL() << "deep nesting loaded";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("nest deeper than"), std::string::npos) << e.message();
  }
  std::string marks = "\x80\x02" + std::string(100000, '(') + ".";
  try {
    unpickle(marks.data(), marks.size(), opt);
    FAIL() << "100k MARKs loaded";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("open MARKs"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace torchless
