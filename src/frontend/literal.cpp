#include "frontend/literal.h"

#include "core/device.h"
#include "core/error.h"

#include <complex>
#include <limits>

namespace torchless::frontend {

const IValue& constantsTableEntry(const std::vector<IValue>* constants, const std::string& name,
                                  const SourceRange& loc) {
  if (!constants) throwErrorAt(loc, "CONSTANTS is only available when loading archives");
  if (name.size() < 2 || name[0] != 'c' ||
      name.find_first_not_of("0123456789", 1) != std::string::npos || name.size() > 12)
    throwErrorAt(loc, "invalid constant specifier: " + name);
  const size_t idx = std::stoul(name.substr(1));
  if (idx >= constants->size())
    throwErrorAt(loc, "constant index " + name + " is out of range of the constants table");
  return (*constants)[idx];
}

std::optional<IValue> enumMember(const TypePtr& enumType, const std::string& name) {
  const auto* en = enumType ? enumType->cast<EnumType>() : nullptr;
  if (!en) return std::nullopt;
  for (size_t i = 0; i < en->names().size(); ++i) {
    if (en->names()[i] != name || !en->values()[i]) continue;
    auto holder = std::make_shared<EnumHolder>();
    holder->type = std::static_pointer_cast<const EnumType>(enumType);
    holder->name = name;
    holder->value = *en->values()[i];
    return IValue(holder);
  }
  return std::nullopt;
}

IValue evalLiteral(const Expr& e, const TypePtr& type, const std::vector<IValue>* constants,
                   const std::string& notConstant) {
  TypePtr t = type;
  if (t && t->kind() == TypeKind::OptionalType) {
    if (e.kind() == TreeKind::None) return IValue();
    t = t->expect<OptionalType>().getElementType();
  }
  auto eval = [&](const Expr& x, const TypePtr& xt) {
    return evalLiteral(x, xt, constants, notConstant);
  };
  switch (e.kind()) {
    case TreeKind::Const: {
      Const c(e.tree());
      if (c.isComplex()) return IValue(std::complex<double>(0.0, c.asFloatingPoint()));
      if (c.isFloatingPoint()) return IValue(c.asFloatingPoint());
      const int64_t v = c.asIntegral();
      if (t && t->kind() == TypeKind::FloatType) return IValue(static_cast<double>(v));
      return IValue(v);
    }
    case TreeKind::Neg: {
      IValue v = eval(UnaryOp(e.tree()).operand(), t);
      if (v.isInt()) return IValue(-v.toInt());
      if (v.isDouble()) return IValue(-v.toDouble());
      if (v.isComplexDouble()) return IValue(-v.toComplexDouble());
      break;
    }
    case TreeKind::StringLiteral: return IValue(StringLiteral(e.tree()).text());
    case TreeKind::True: return IValue(true);
    case TreeKind::False: return IValue(false);
    case TreeKind::None: return IValue();
    case TreeKind::Var: {
      const std::string& n = Var(e.tree()).name().name();
      if (n == "inf") return IValue(std::numeric_limits<double>::infinity());
      if (n == "nan") return IValue(std::numeric_limits<double>::quiet_NaN());
      break;
    }
    case TreeKind::ListLiteral:
    case TreeKind::TupleLiteral: {
      auto items = SequenceLiteral(e.tree()).inputs();
      const auto* lt = t ? t->cast<ListType>() : nullptr;
      const auto* tt = t ? t->cast<TupleType>() : nullptr;
      std::vector<IValue> elems;
      for (size_t i = 0; i < items.size(); ++i) {
        TypePtr et;
        if (lt)
          et = lt->getElementType();
        else if (tt && i < tt->elements().size())
          et = tt->elements()[i];
        elems.push_back(eval(items[i], et));
      }
      if (lt) return IValue(ListImpl::create(lt->getElementType(), std::move(elems)));
      if (tt || e.kind() == TreeKind::TupleLiteral)
        return IValue(TupleImpl::create(std::move(elems), tt && tt->isNamed() ? t : nullptr));
      TypePtr elemType = elems.empty() ? TensorType::get() : elems[0].type();
      return IValue(ListImpl::create(elemType, std::move(elems)));
    }
    case TreeKind::Select: {
      Select s(e.tree());
      if (s.value().kind() == TreeKind::Var && Var(s.value().tree()).name().name() == "CONSTANTS")
        return constantsTableEntry(constants, s.selector().name(), e.range());
      // A member of the enum the parameter is annotated with, spelled as the printer writes
      // it (torchvision's `interpolation:
      // InterpolationMode=__torch__....InterpolationMode.BILINEAR`).
      if (const auto* en = t ? t->cast<EnumType>() : nullptr) {
        const std::string owner(s.value().range().text());
        const std::string& q = en->name();
        const bool names =
            owner == q || (q.size() > owner.size() &&
                           q.compare(q.size() - owner.size(), owner.size(), owner) == 0 &&
                           q[q.size() - owner.size() - 1] == '.');
        if (names)
          if (auto m = enumMember(t, s.selector().name())) return *m;
      }
      break;
    }
    case TreeKind::Apply: {
      Apply a(e.tree());
      if (a.callee().range().text() == "torch.device" && a.inputs().size() == 1 &&
          a.inputs()[0].kind() == TreeKind::StringLiteral) {
        try {
          return IValue(Device::parse(StringLiteral(a.inputs()[0].tree()).text()));
        } catch (const Error& err) {
          throwErrorAt(e.range(), err.message());
        }
      }
      break;
    }
    default: break;
  }
  throwErrorAt(e.range(), notConstant);
}

}  // namespace torchless::frontend
