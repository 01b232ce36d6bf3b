package rlconform.cards;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A strict reader of the one JSON object a protocol v1 request carries:
 * members whose values are strings, numbers, true, false, null, or nested
 * values (read and dropped). An integer is a BigInteger (so that no value
 * wraps into range), any other number a BigDecimal: the caller tells a
 * JSON integer from a float. The JDK has no JSON reader, and the card uses
 * no library but Guava.
 */
final class Json {
  private final String s;
  private int i;
  private int depth;

  private Json(String s) {
    this.s = s;
  }

  /** Reads s as one JSON object; throws IllegalArgumentException otherwise. */
  static Map<String, Object> object(String s) {
    Json j = new Json(s);
    j.space();
    if (j.peek() != '{') {
      throw new IllegalArgumentException("the body is not a JSON object");
    }
    @SuppressWarnings("unchecked")
    Map<String, Object> m = (Map<String, Object>) j.value();
    j.space();
    if (j.i != s.length()) {
      throw new IllegalArgumentException("trailing data after the JSON object");
    }
    return m;
  }

  private char peek() {
    if (i >= s.length()) {
      throw new IllegalArgumentException("unexpected end of JSON");
    }
    return s.charAt(i);
  }

  private void space() {
    while (i < s.length() && " \t\r\n".indexOf(s.charAt(i)) >= 0) {
      i++;
    }
  }

  private void expect(char c) {
    if (peek() != c) {
      throw new IllegalArgumentException("expected '" + c + "' at offset " + i);
    }
    i++;
  }

  private Object value() {
    space();
    char c = peek();
    if (c == '{' || c == '[') {
      if (++depth > 64) {
        throw new IllegalArgumentException("JSON nested too deep");
      }
      Object v = c == '{' ? members() : elements();
      depth--;
      return v;
    }
    if (c == '"') {
      return string();
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      return number();
    }
    for (String lit : new String[] {"true", "false", "null"}) {
      if (s.startsWith(lit, i)) {
        i += lit.length();
        return lit.equals("null") ? null : Boolean.valueOf(lit);
      }
    }
    throw new IllegalArgumentException("unexpected '" + c + "' at offset " + i);
  }

  private Map<String, Object> members() {
    Map<String, Object> m = new LinkedHashMap<>();
    expect('{');
    space();
    if (peek() == '}') {
      i++;
      return m;
    }
    while (true) {
      space();
      String k = string();
      space();
      expect(':');
      m.put(k, value());
      space();
      if (peek() == ',') {
        i++;
        continue;
      }
      expect('}');
      return m;
    }
  }

  private Object elements() {
    expect('[');
    space();
    if (peek() == ']') {
      i++;
      return null;
    }
    while (true) {
      value();
      space();
      if (peek() == ',') {
        i++;
        continue;
      }
      expect(']');
      return null; // arrays are read and dropped: no field of the protocol is one
    }
  }

  private String string() {
    expect('"');
    StringBuilder b = new StringBuilder();
    while (true) {
      char c = peek();
      i++;
      if (c == '"') {
        return b.toString();
      }
      if (c < 0x20) {
        throw new IllegalArgumentException("a control character in a JSON string");
      }
      if (c != '\\') {
        b.append(c);
        continue;
      }
      char e = peek();
      i++;
      switch (e) {
        case '"', '\\', '/' -> b.append(e);
        case 'b' -> b.append('\b');
        case 'f' -> b.append('\f');
        case 'n' -> b.append('\n');
        case 'r' -> b.append('\r');
        case 't' -> b.append('\t');
        case 'u' -> {
          if (i + 4 > s.length()) {
            throw new IllegalArgumentException("a short \\u escape");
          }
          b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
          i += 4;
        }
        default -> throw new IllegalArgumentException("a bad escape \\" + e);
      }
    }
  }

  private Object number() {
    int start = i;
    if (peek() == '-') {
      i++;
    }
    boolean integer = true;
    while (i < s.length() && "0123456789+-.eE".indexOf(s.charAt(i)) >= 0) {
      char c = s.charAt(i);
      integer &= c >= '0' && c <= '9';
      i++;
    }
    String t = s.substring(start, i);
    if (!t.matches("-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?")) {
      throw new IllegalArgumentException("a malformed JSON number " + t);
    }
    return integer ? new BigInteger(t) : new BigDecimal(t);
  }
}
