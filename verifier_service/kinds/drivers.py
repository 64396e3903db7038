"""function_io's drivers: a program of the service's, appended to the completion, that calls the entry point on
each case's arguments and prints what it returned as JSON, one line per case (``MARK INDEX JSON`` or
``MARK INDEX !error``). The arguments are written as literals of the language, typed by the entry point's
signature (found in the setup, else the completion); the expected values never enter the sandbox.

Types understood (per language, and nested): integers, floats, booleans, strings, characters, lists (C++
``vector``, Java ``List``/``ArrayList``, Rust ``Vec``/slices), tuples (C++ ``tuple``/``pair``, Rust tuples,
javatuples), optionals (``optional``, ``Optional``, ``Option``) and maps (``map``, ``Map``/``HashMap``,
``HashMap``). JavaScript and TypeScript need no types (the arguments are JSON); nor do PHP, Lua, Perl and R, whose
drivers (``kinds/dynamic_drivers.py``) write JSON values as the language's literals and serialize the results.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

from verifier_service.kinds import dynamic_drivers, java_source

SUPPORTED = ("cpp", "java", "javascript", "typescript", "rust", *dynamic_drivers.DYNAMIC)


class DriverError(ValueError):
    """The entry point's signature or an argument cannot be written in the language (the spec is at fault)."""


@dataclass(frozen=True)
class Type:
    kind: str                      # int, float, bool, str, char, list, tuple, opt, dict, any
    text: str                      # as the language spells it (for constructors)
    args: tuple[Type, ...] = ()
    ref: bool = False              # Rust: a reference (&str, &Vec<T>, &[T])


# ---------------------------------------------------------------- signatures

def _split_top(text: str, sep: str = ",") -> list[str]:
    out, depth, cur = [], 0, []
    for c in text:
        if c in "<([{":
            depth += 1
        elif c in ">)]}":
            depth -= 1
        if c == sep and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    if "".join(cur).strip():
        out.append("".join(cur))
    return [p.strip() for p in out]


_CPP_KIND = {"bool": "bool", "char": "char", "float": "float", "double": "float", "string": "str",
             "vector": "list", "list": "list", "deque": "list", "set": "list", "tuple": "tuple", "pair": "tuple",
             "optional": "opt", "map": "dict", "unordered_map": "dict"}
_JAVA_KIND = {"boolean": "bool", "Boolean": "bool", "char": "char", "Character": "char", "float": "float",
              "Float": "float", "double": "float", "Double": "float", "String": "str", "List": "list",
              "ArrayList": "list", "Optional": "opt", "Map": "dict", "HashMap": "dict", "TreeMap": "dict",
              "Pair": "tuple", "Triplet": "tuple", "Quartet": "tuple", "Unit": "tuple"}
_INTS = re.compile(r"^(?:(?:unsigned|signed|long|short|int|size_t|int64_t|int32_t|uint64_t|uint32_t)\s*)+$|"
                   r"^(?:long|int|short|byte|Long|Integer|Short|Byte|[iu](?:8|16|32|64|128|size))$")


def parse_type(lang: str, text: str) -> Type:
    text = text.strip()
    if lang == "rust":
        ref = text.startswith("&")
        inner = re.sub(r"^&\s*(?:'\w+\s+)?(?:mut\s+)?", "", text).strip()
        if inner.startswith("(") and inner.endswith(")"):
            parts = _split_top(inner[1:-1])
            return Type("tuple", inner, tuple(parse_type(lang, p) for p in parts), ref)
        if inner.startswith("[") and inner.endswith("]"):
            return Type("list", inner, (parse_type(lang, inner[1:-1]),), ref)
        if inner in ("str", "String"):
            return Type("str", inner, (), ref or inner == "str")
        if inner == "bool" or inner == "char":
            return Type(inner, inner, (), ref)
        if inner in ("f32", "f64"):
            return Type("float", inner, (), ref)
        if _INTS.match(inner):
            return Type("int", inner, (), ref)
        m = re.fullmatch(r"(?:std::collections::)?(\w+)\s*<(.*)>", inner, re.S)
        if m:
            name, args = m.group(1), tuple(parse_type(lang, p) for p in _split_top(m.group(2)))
            kind = {"Vec": "list", "Option": "opt", "HashMap": "dict", "BTreeMap": "dict",
                    "VecDeque": "list"}.get(name)
            if kind:
                return Type(kind, inner, args, ref)
        raise DriverError(f"the rust type {text!r} is not one function_io can write")
    clean = re.sub(r"\bconst\b|&|\bfinal\b", "", text).strip()
    if lang == "java" and clean.endswith("[]"):
        return Type("list", clean, (parse_type(lang, clean[:-2]),))
    m = re.fullmatch(r"((?:std::)?[\w.]+)\s*(?:<(.*)>)?", clean, re.S)
    if not m:
        if _INTS.match(clean):
            return Type("int", clean)
        raise DriverError(f"the {lang} type {text!r} is not one function_io can write")
    name = m.group(1).removeprefix("std::")
    args = tuple(parse_type(lang, p) for p in _split_top(m.group(2))) if m.group(2) else ()
    if _INTS.match(name):
        return Type("int", clean)
    kind = (_CPP_KIND if lang == "cpp" else _JAVA_KIND).get(name)
    if kind is None:
        raise DriverError(f"the {lang} type {text!r} is not one function_io can write")
    return Type(kind, clean, args)


@dataclass(frozen=True)
class Signature:
    params: tuple[Type, ...]
    returns: str
    static: bool = True       # Java: a static method (else called on a new instance of its class)
    owner: str = ""           # Java: the class that declares it


def signature(lang: str, entry: str, setup: str, completion: str) -> Signature:
    """The entry point's parameter types, from the setup (the prompt), else from the completion."""
    for text in (setup, completion, setup + completion):
        found = _find_signature(lang, entry, text)
        if found is not None:
            return found
    raise DriverError(f"no {lang} function named {entry!r} with a signature function_io can read")


def _find_signature(lang: str, entry: str, text: str) -> Signature | None:
    if not text:
        return None
    if lang in ("javascript", "typescript", *dynamic_drivers.DYNAMIC):
        return Signature((), "")
    if lang == "rust":
        text = re.sub(r"'[A-Za-z_]\w*(?!')", "", text)
        m = re.search(rf"\bfn\s+{re.escape(entry)}\s*(?:<[^>]*>)?\s*\((.*?)\)\s*(?:->\s*([^{{]+?))?\s*"
                      r"(?:where[^{]*)?\{", text, re.S)
        if not m:
            return None
        params = [p.split(":", 1)[1] for p in _split_top(m.group(1)) if ":" in p]
        return Signature(tuple(parse_type(lang, p) for p in params), (m.group(2) or "").strip())
    blanked = java_source.blank(text)
    m = None
    end = r"\{" if lang == "java" else r"[{;]"  # (C++: a prototype in the setup declares it too)
    pattern = rf"([\w:<>,\s\[\]&*]+?)\s+{re.escape(entry)}\s*\(([^()]*)\)\s*(?:throws[^{{]*)?{end}"
    for m in re.finditer(pattern, blanked, re.S):  # noqa: B007 - the last definition of that name
        pass
    if m is None:
        return None
    head = text[m.start(1):m.end(1)]
    params_text = text[m.start(2):m.end(2)]
    params = []
    for p in _split_top(params_text):
        p = re.sub(r"\s+", " ", p).strip()
        if not p:
            continue
        type_text = re.sub(r"\s*[\w$]+$", "", p)
        params.append(parse_type(lang, type_text))
    if lang == "java":
        owner = _java_owner(text, m.start())
        return Signature(tuple(params), head.strip().split()[-1] if head.strip() else "",
                         static=re.search(r"\bstatic\b", head) is not None, owner=owner)
    return Signature(tuple(params), head.strip())


def _java_owner(text: str, at: int) -> str:
    inside = [d for d in java_source.types(text) if d.start < at]
    return java_source.binary_name(inside[-1]) if inside else "Main"


# ---------------------------------------------------------------- literals

def _c_string(s: str, lang: str) -> str:
    out = []
    for ch in s:
        o = ord(ch)
        if ch in "\\\"":
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif o < 0x20 or o == 0x7f:
            out.append(f"\\{o:03o}" if lang == "cpp" else f"\\u{{{o:x}}}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _float(v: float, lang: str, t: Type) -> str:
    v = float(v)
    if math.isnan(v) or math.isinf(v):
        if lang == "cpp":
            return "NAN" if math.isnan(v) else ("INFINITY" if v > 0 else "-INFINITY")
        if lang == "java":
            return "Double.NaN" if math.isnan(v) else ("Double.POSITIVE_INFINITY" if v > 0 else
                                                       "Double.NEGATIVE_INFINITY")
        return f"{t.text}::NAN" if math.isnan(v) else (f"{t.text}::INFINITY" if v > 0 else f"{t.text}::NEG_INFINITY")
    text = repr(v)
    if "e" not in text and "." not in text:
        text += ".0"
    if lang == "java":
        return text + ("f" if t.text in ("float", "Float") else "d")
    if lang == "cpp":
        return f"static_cast<{t.text}>({text})"
    return text


def literal(lang: str, v, t: Type) -> str:
    """``v`` (a JSON value) written in ``lang`` as a value of type ``t``."""
    k = t.kind
    if k == "opt":
        if v is None:
            return {"cpp": "std::nullopt", "java": "java.util.Optional.empty()", "rust": "None"}[lang]
        inner = literal(lang, v, t.args[0])
        return {"cpp": f"{t.text}({inner})", "java": f"java.util.Optional.of({inner})", "rust": f"Some({inner})"}[lang]
    if v is None:
        if lang == "java" and k not in ("int", "float", "bool", "char"):
            return "null"
        raise DriverError(f"null is not a {t.text}")
    if k == "bool":
        if type(v) is not bool:
            raise DriverError(f"{v!r} is not a {t.text}")
        return "true" if v else "false"
    if k == "int":
        if type(v) is not int:
            raise DriverError(f"{v!r} is not a {t.text}")
        if lang == "java":
            return f"{v}L" if t.text in ("long", "Long") else (f"({t.text}){v}" if t.text in ("short", "byte", "Short",
                                                                                       "Byte") else str(v))
        if lang == "cpp":
            return f"static_cast<{t.text}>({v}LL)" if abs(v) < 2 ** 63 else str(v)
        return str(v)
    if k == "float":
        if type(v) not in (int, float):
            raise DriverError(f"{v!r} is not a {t.text}")
        return _float(v, lang, t)
    if k in ("str", "char"):
        if type(v) is not str or (k == "char" and len(v) != 1):
            raise DriverError(f"{v!r} is not a {t.text}")
        if k == "char":
            q = _c_string(v, lang)[1:-1].replace("'", "\\'").replace('\\"', '"')
            return f"'{q}'" if lang != "cpp" else f"static_cast<char>('{q}')"
        if lang == "java":
            return json.dumps(v)
        if lang == "cpp":
            return f"std::string({_c_string(v, lang)})"
        return _c_string(v, lang) if t.ref else f"String::from({_c_string(v, lang)})"
    if k == "list":
        if type(v) is not list:
            raise DriverError(f"{v!r} is not a {t.text}")
        items = [literal(lang, x, t.args[0]) for x in v]
        if lang == "cpp":
            return f"{t.text}{{{', '.join(items)}}}"
        if lang == "java":
            if t.text.endswith("[]"):
                return f"new {t.text}{{{', '.join(items)}}}"
            return (f"new java.util.ArrayList<>(java.util.Arrays.asList({', '.join(items)}))" if items
                    else "new java.util.ArrayList<>()")
        body = f"vec![{', '.join(items)}]"
        return f"&{body}" if t.ref else body
    if k == "tuple":
        if type(v) is not list or len(v) != len(t.args):
            raise DriverError(f"{v!r} is not a {t.text}")
        items = [literal(lang, x, a) for x, a in zip(v, t.args, strict=True)]
        if lang == "cpp":
            return f"{t.text}{{{', '.join(items)}}}"
        if lang == "java":
            return f"org.javatuples.{t.text.split('<')[0].split('.')[-1]}.with({', '.join(items)})"
        return f"({', '.join(items)}{',' if len(items) == 1 else ''})"
    if k == "dict":
        if type(v) is not dict:
            raise DriverError(f"{v!r} is not a {t.text}")
        kt, vt = t.args
        pairs = [(literal(lang, _key(key, kt), kt), literal(lang, val, vt)) for key, val in v.items()]
        if lang == "cpp":
            return f"{t.text}{{{', '.join(f'{{{a}, {b}}}' for a, b in pairs)}}}"
        if lang == "java":
            return f"rlvrMap(new java.util.HashMap<>(){''.join(f', {a}, {b}' for a, b in pairs)})"
        if not pairs:
            return "std::collections::HashMap::new()"
        return f"std::collections::HashMap::from([{', '.join(f'({a}, {b})' for a, b in pairs)}])"
    raise DriverError(f"the type {t.text!r} cannot be written")


def _key(key: str, t: Type):
    if t.kind == "int":
        return int(key)
    if t.kind == "float":
        return float(key)
    if t.kind == "bool":
        return key == "true"
    return key


# ---------------------------------------------------------------- drivers

def open_braces(lang: str, text: str) -> int:
    """How many ``{`` of the setup + completion are still open (MultiPL-E's completions stop before the ``}``
    that closes the function; its tests supply it): the driver closes them (Lua: the ``end``s)."""
    if lang in dynamic_drivers.DYNAMIC:
        return dynamic_drivers.open_blocks(lang, text)
    if lang == "rust":
        text = re.sub(r"'[A-Za-z_]\w*(?!')", "", text)
    blanked = java_source.blank(text)
    return max(0, blanked.count("{") - blanked.count("}"))


def driver(lang: str, entry: str, sig: Signature, cases: list[list], mark: str, name: str) -> str:
    """The code after the completion (and the braces it left open)."""
    if lang in ("javascript", "typescript"):
        return _js_driver(entry, cases, mark, name)
    if lang in dynamic_drivers.DYNAMIC:
        try:
            return dynamic_drivers.driver(lang, entry, cases, mark, name)
        except (ValueError, RecursionError) as exc:
            raise DriverError(str(exc)) from exc
    calls = []
    for args in cases:
        if len(args) != len(sig.params):
            raise DriverError(f"{entry} takes {len(sig.params)} arguments; a case gives {len(args)}")
        calls.append(", ".join(literal(lang, a, t) for a, t in zip(args, sig.params, strict=True)))
    if lang == "cpp":
        return _cpp_driver(entry, calls, mark, name)
    if lang == "java":
        return _java_driver(entry, sig, calls, mark, name)
    return _rust_driver(entry, calls, mark, name)


def _js_driver(entry: str, cases: list[list], mark: str, name: str) -> str:
    return f"""
;(() => {{
  const {name}_show = (v) => {{
    if (v === undefined || v === null) return 'null';
    if (typeof v === 'number') return Number.isNaN(v) ? 'NaN' : (v === Infinity ? 'Infinity' :
      (v === -Infinity ? '-Infinity' : JSON.stringify(v)));
    if (typeof v === 'bigint') return v.toString();
    if (typeof v === 'boolean' || typeof v === 'string') return JSON.stringify(v);
    if (Array.isArray(v) || v instanceof Set) return '[' + Array.from(v, {name}_show).join(',') + ']';
    if (v instanceof Map) return '{{' + Array.from(v, ([k, x]) => JSON.stringify(String(k)) + ':' + {name}_show(x))
      .join(',') + '}}';
    if (typeof v === 'object') return '{{' + Object.keys(v).map((k) => JSON.stringify(k) + ':' + {name}_show(v[k]))
      .join(',') + '}}';
    return JSON.stringify(String(v));
  }};
  const {name}_cases = {json.dumps(cases)};
  for (let i = 0; i < {name}_cases.length; i++) {{
    let line;
    try {{ line = {name}_show({entry}(...{name}_cases[i])); }}
    catch (e) {{ line = '!' + String(e && e.name || 'error'); }}
    process.stdout.write('{mark} ' + i + ' ' + line + '\\n');
  }}
}})();
"""


def _cpp_driver(entry: str, calls: list[str], mark: str, name: str) -> str:
    ns = f"{name}_io"
    body = "\n".join(
        f"    try {{ auto r = {entry}({call}); std::string s = {ns}::show(r); "
        f"std::printf(\"{mark} {i} %s\\n\", s.c_str()); }}\n"
        f"    catch (...) {{ std::printf(\"{mark} {i} !exception\\n\"); }}\n    std::fflush(stdout);"
        for i, call in enumerate(calls))
    return f"""
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>
namespace {ns} {{
template <class T> struct seq : std::false_type {{}};
template <class T, class A> struct seq<std::vector<T, A>> : std::true_type {{}};
template <class T, class C, class A> struct seq<std::set<T, C, A>> : std::true_type {{}};
template <class T> struct dict : std::false_type {{}};
template <class K, class V, class C, class A> struct dict<std::map<K, V, C, A>> : std::true_type {{}};
template <class K, class V, class H, class E, class A> struct dict<std::unordered_map<K, V, H, E, A>>
    : std::true_type {{}};
template <class T> struct opt : std::false_type {{}};
template <class T> struct opt<std::optional<T>> : std::true_type {{}};
template <class T> struct tup : std::false_type {{}};
template <class... T> struct tup<std::tuple<T...>> : std::true_type {{}};
template <class A, class B> struct tup<std::pair<A, B>> : std::true_type {{}};
template <class T> struct no : std::false_type {{}};
inline std::string quote(const std::string& s) {{
    std::string o = "\\"";
    for (unsigned char c : s) {{
        if (c == '"' || c == '\\\\') {{ o += '\\\\'; o += (char)c; }}
        else if (c < 0x20) {{ char b[8]; std::snprintf(b, sizeof b, "\\\\u%04x", c); o += b; }}
        else o += (char)c;
    }}
    return o + "\\"";
}}
template <class T> std::string show(const T& v);
template <class T> std::string key(const T& k) {{
    if constexpr (std::is_convertible_v<T, std::string>) return quote(std::string(k));
    else return quote(show(k));
}}
template <class T> std::string show(const T& v) {{
    if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
    else if constexpr (std::is_same_v<T, char>) return quote(std::string(1, v));
    else if constexpr (std::is_integral_v<T>) return std::to_string(v);
    else if constexpr (std::is_floating_point_v<T>) {{
        if (std::isnan(v)) return "NaN";
        if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
        char b[64];
        std::snprintf(b, sizeof b, std::is_same_v<T, float> ? "%.9g" : "%.17g", (double)v);
        return b;
    }}
    else if constexpr (std::is_convertible_v<T, std::string>) return quote(std::string(v));
    else if constexpr (seq<T>::value) {{
        std::string o = "["; bool first = true;
        for (const auto& e : v) {{ if (!first) o += ","; first = false; o += show(e); }}
        return o + "]";
    }}
    else if constexpr (dict<T>::value) {{
        std::string o = "{{"; bool first = true;
        for (const auto& kv : v) {{ if (!first) o += ","; first = false; o += key(kv.first) + ":" + show(kv.second); }}
        return o + "}}";
    }}
    else if constexpr (opt<T>::value) return v ? show(*v) : std::string("null");
    else if constexpr (tup<T>::value) {{
        std::string o = "["; bool first = true;
        std::apply([&](const auto&... e) {{ ((o += (first ? "" : ","), o += show(e), first = false), ...); }}, v);
        return o + "]";
    }}
    else static_assert(no<T>::value, "function_io cannot print this return type");
}}
}}
int main() {{
{body}
    return 0;
}}
"""


def _java_driver(entry: str, sig: Signature, calls: list[str], mark: str, name: str) -> str:
    target = f"{sig.owner}.{entry}" if sig.static else f"new {sig.owner}().{entry}"
    body = "\n".join(
        f"        try {{ Object r = {target}({call}); out.println(\"{mark} {i} \" + show(r)); }}\n"
        f"        catch (Throwable e) {{ out.println(\"{mark} {i} !\" + e.getClass().getName()); }}\n"
        "        out.flush();"
        for i, call in enumerate(calls))
    return f"""
class {name} {{
    @SuppressWarnings("unchecked")
    static <K, V> java.util.HashMap<K, V> rlvrMap(java.util.HashMap<K, V> m, Object... kv) {{
        for (int i = 0; i + 1 < kv.length; i += 2) m.put((K) kv[i], (V) kv[i + 1]);
        return m;
    }}
    static String quote(String s) {{
        StringBuilder b = new StringBuilder("\\"");
        for (int i = 0; i < s.length(); i++) {{
            char c = s.charAt(i);
            if (c == '"' || c == '\\\\') b.append('\\\\').append(c);
            else if (c < 0x20) b.append(String.format("\\\\u%04x", (int) c));
            else b.append(c);
        }}
        return b.append('"').toString();
    }}
    static String show(Object o) {{
        if (o == null) return "null";
        if (o instanceof Boolean || o instanceof Long || o instanceof Integer || o instanceof Short
                || o instanceof Byte || o instanceof java.math.BigInteger) return o.toString();
        if (o instanceof Double || o instanceof Float) {{
            double d = ((Number) o).doubleValue();
            if (Double.isNaN(d)) return "NaN";
            if (Double.isInfinite(d)) return d > 0 ? "Infinity" : "-Infinity";
            return o instanceof Float ? Float.toString((Float) o) : Double.toString(d);
        }}
        if (o instanceof Character || o instanceof String) return quote(o.toString());
        if (o instanceof java.util.Optional) {{
            java.util.Optional<?> p = (java.util.Optional<?>) o;
            return p.isPresent() ? show(p.get()) : "null";
        }}
        if (o instanceof java.util.Map) {{
            StringBuilder b = new StringBuilder("{{"); boolean first = true;
            for (java.util.Map.Entry<?, ?> e : ((java.util.Map<?, ?>) o).entrySet()) {{
                if (!first) b.append(','); first = false;
                b.append(quote(String.valueOf(e.getKey()))).append(':').append(show(e.getValue()));
            }}
            return b.append('}}').toString();
        }}
        if (o instanceof Iterable) {{
            StringBuilder b = new StringBuilder("["); boolean first = true;
            for (Object e : (Iterable<?>) o) {{ if (!first) b.append(','); first = false; b.append(show(e)); }}
            return b.append(']').toString();
        }}
        if (o.getClass().isArray()) {{
            StringBuilder b = new StringBuilder("[");
            for (int i = 0; i < java.lang.reflect.Array.getLength(o); i++) {{
                if (i > 0) b.append(',');
                b.append(show(java.lang.reflect.Array.get(o, i)));
            }}
            return b.append(']').toString();
        }}
        if (o.getClass().getName().startsWith("org.javatuples.")) {{
            try {{ return show(o.getClass().getMethod("toList").invoke(o)); }} catch (Exception e) {{ }}
        }}
        return quote(o.toString());
    }}
    public static void main(String[] args) {{
        java.io.PrintStream out = System.out;
{body}
    }}
}}
"""


def _rust_driver(entry: str, calls: list[str], mark: str, name: str) -> str:
    trait = f"{name.capitalize()}Show"
    body = "\n".join(
        f"    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {entry}({call}))) {{\n"
        f"        Ok(r) => println!(\"{mark} {i} {{}}\", {trait}::show(&r)),\n"
        f"        Err(_) => println!(\"{mark} {i} !panic\"),\n    }}"
        for i, call in enumerate(calls))
    ints = ", ".join(("i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize"))
    return f"""
#[allow(dead_code)]
trait {trait} {{ fn show(&self) -> String; }}
macro_rules! {name}_ints {{ ($($t:ty),*) => {{
    $(impl {trait} for $t {{ fn show(&self) -> String {{ self.to_string() }} }})* }} }}
{name}_ints!({ints});
fn {name}_float(v: f64, text: String) -> String {{
    if v.is_nan() {{ "NaN".to_string() }} else if v.is_infinite() {{
        if v > 0.0 {{ "Infinity".to_string() }} else {{ "-Infinity".to_string() }} }} else {{ text }}
}}
impl {trait} for f64 {{ fn show(&self) -> String {{ {name}_float(*self, format!("{{:?}}", self)) }} }}
impl {trait} for f32 {{ fn show(&self) -> String {{ {name}_float(*self as f64, format!("{{:?}}", self)) }} }}
impl {trait} for bool {{ fn show(&self) -> String {{ self.to_string() }} }}
fn {name}_quote(s: &str) -> String {{
    let mut o = String::from("\\"");
    for c in s.chars() {{
        match c {{ '"' => o.push_str("\\\\\\""), '\\\\' => o.push_str("\\\\\\\\"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\\\u{{:04x}}", c as u32)), c => o.push(c) }}
    }}
    o.push('"');
    o
}}
impl {trait} for str {{ fn show(&self) -> String {{ {name}_quote(self) }} }}
impl {trait} for String {{ fn show(&self) -> String {{ {name}_quote(self) }} }}
impl {trait} for char {{ fn show(&self) -> String {{ {name}_quote(&self.to_string()) }} }}
impl<T: {trait} + ?Sized> {trait} for &T {{ fn show(&self) -> String {{ (**self).show() }} }}
impl<T: {trait}> {trait} for Vec<T> {{
    fn show(&self) -> String {{ format!("[{{}}]", self.iter().map(|e| e.show()).collect::<Vec<_>>().join(",")) }}
}}
impl<T: {trait}> {trait} for [T] {{
    fn show(&self) -> String {{ format!("[{{}}]", self.iter().map(|e| e.show()).collect::<Vec<_>>().join(",")) }}
}}
impl<T: {trait}> {trait} for Option<T> {{
    fn show(&self) -> String {{ match self {{ Some(v) => v.show(), None => "null".to_string() }} }}
}}
impl<K: {trait}, V: {trait}> {trait} for std::collections::HashMap<K, V> {{
    fn show(&self) -> String {{
        let parts: Vec<String> = self.iter().map(|(k, v)| {{
            let key = k.show();
            let key = if key.starts_with('"') {{ key }} else {{ {name}_quote(&key) }};
            format!("{{}}:{{}}", key, v.show())
        }}).collect();
        format!("{{{{{{}}}}}}", parts.join(","))
    }}
}}
macro_rules! {name}_tuples {{ ($(($($n:tt $t:ident),+)),*) => {{ $(impl<$($t: {trait}),+> {trait} for ($($t,)+) {{
    fn show(&self) -> String {{ let v: Vec<String> = vec![$(self.$n.show()),+]; format!("[{{}}]", v.join(",")) }}
}})* }} }}
{name}_tuples!((0 A), (0 A, 1 B), (0 A, 1 B, 2 C), (0 A, 1 B, 2 C, 3 D), (0 A, 1 B, 2 C, 3 D, 4 E));
fn main() {{
    std::panic::set_hook(Box::new(|_| {{}}));
{body}
}}
"""
