// S3 and STS XML responses with libexpat (see include/ringfeed/io/s3_xml.hpp).
#include <ringfeed/io/s3_xml.hpp>

#include <ringfeed/text.hpp>

#include <expat.h>

#include <charconv>
#include <memory>
#include <stdexcept>

namespace ringfeed::io {

namespace {

/// A parsed element tree, small and flat enough for these responses.
struct xml_node {
  std::string name;  ///< local name (no namespace prefix)
  std::string text;
  std::vector<xml_node> children;

  [[nodiscard]] const xml_node* child(std::string_view n) const {
    for (const auto& c : children) {
      if (c.name == n) return &c;
    }
    return nullptr;
  }
  [[nodiscard]] std::string child_text(std::string_view n) const {
    const xml_node* c = child(n);
    return c != nullptr ? c->text : std::string{};
  }
};

struct parse_state {
  xml_node root;
  std::vector<xml_node*> stack;
  bool has_dtd = false;
  XML_Parser parser = nullptr;
};

std::string local_name(const XML_Char* name) {
  std::string_view n = name;
  if (const auto colon = n.rfind(':'); colon != std::string_view::npos) n.remove_prefix(colon + 1);
  return std::string(n);
}

void XMLCALL on_start(void* user, const XML_Char* name, const XML_Char** /*attributes*/) {
  auto* st = static_cast<parse_state*>(user);
  if (st->stack.empty()) {
    st->root.name = local_name(name);
    st->stack.push_back(&st->root);
    return;
  }
  // The push may move the parent's earlier children, all closed by now;
  // the stack holds only open elements, whose own vectors do not move.
  xml_node* parent = st->stack.back();
  parent->children.push_back(xml_node{local_name(name), {}, {}});
  st->stack.push_back(&parent->children.back());
}

void XMLCALL on_end(void* user, const XML_Char* /*name*/) {
  auto* st = static_cast<parse_state*>(user);
  st->stack.pop_back();
}

void XMLCALL on_text(void* user, const XML_Char* s, int len) {
  auto* st = static_cast<parse_state*>(user);
  if (!st->stack.empty()) st->stack.back()->text.append(s, static_cast<std::size_t>(len));
}

void XMLCALL on_doctype(void* user, const XML_Char*, const XML_Char*, const XML_Char*, int) {
  auto* st = static_cast<parse_state*>(user);
  st->has_dtd = true;
  XML_StopParser(st->parser, XML_FALSE);
}

struct parser_deleter {
  void operator()(XML_ParserStruct* p) const noexcept { XML_ParserFree(p); }
};

/// The document's tree; throws std::invalid_argument("<what>: <reason>").
xml_node parse(std::string_view xml, std::string_view what) {
  std::unique_ptr<XML_ParserStruct, parser_deleter> parser(XML_ParserCreate("UTF-8"));
  if (!parser) throw std::runtime_error("libexpat could not create a parser");
  parse_state st;
  st.parser = parser.get();
  XML_SetUserData(parser.get(), &st);
  XML_SetElementHandler(parser.get(), on_start, on_end);
  XML_SetCharacterDataHandler(parser.get(), on_text);
  XML_SetStartDoctypeDeclHandler(parser.get(), on_doctype);
  const auto status = XML_Parse(parser.get(), xml.data(), static_cast<int>(xml.size()), XML_TRUE);
  if (st.has_dtd) throw std::invalid_argument(std::string(what) + ": the document has a DTD, which S3 never sends");
  if (status != XML_STATUS_OK) {
    throw std::invalid_argument(std::string(what) + ": not well-formed XML (" +
                                XML_ErrorString(XML_GetErrorCode(parser.get())) + " at line " +
                                std::to_string(XML_GetCurrentLineNumber(parser.get())) + ")");
  }
  return std::move(st.root);
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/// EncodingType=url: S3 form-encodes ('+' for a space, as botocore's unquote_plus reads it).
std::string url_decode(std::string_view s, std::string_view what) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out.push_back(' ');
    } else if (s[i] == '%') {
      const int hi = i + 2 < s.size() ? hex_value(s[i + 1]) : -1;
      const int lo = i + 2 < s.size() ? hex_value(s[i + 2]) : -1;
      if (hi < 0 || lo < 0) {
        throw std::invalid_argument(std::string(what) + ": bad percent escape in '" + escape_bytes(s) + "'");
      }
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

}  // namespace

s3_list_page parse_list_objects_v2(std::string_view xml) {
  constexpr std::string_view what = "ListObjectsV2 response";
  const xml_node root = parse(xml, what);
  if (root.name != "ListBucketResult") {
    throw std::invalid_argument(std::string(what) + ": the root element is <" + escape_bytes(root.name) +
                                ">, not <ListBucketResult>");
  }
  const bool url_encoded = root.child_text("EncodingType") == "url";
  auto decode = [&](const std::string& s) { return url_encoded ? url_decode(s, what) : s; };

  s3_list_page page;
  const std::string truncated = root.child_text("IsTruncated");
  page.truncated = truncated == "true";
  if (!truncated.empty() && truncated != "true" && truncated != "false") {
    throw std::invalid_argument(std::string(what) + ": IsTruncated is '" + escape_bytes(truncated) + "'");
  }
  for (const auto& c : root.children) {
    if (c.name == "Contents") {
      s3_object_info info;
      const xml_node* key = c.child("Key");
      if (key == nullptr) throw std::invalid_argument(std::string(what) + ": a <Contents> has no <Key>");
      info.key = decode(key->text);
      const std::string size = c.child_text("Size");
      const auto [p, ec] = std::from_chars(size.data(), size.data() + size.size(), info.size);
      if (size.empty() || ec != std::errc{} || p != size.data() + size.size()) {
        throw std::invalid_argument(std::string(what) + ": the <Size> of '" + escape_bytes(info.key) + "' is '" +
                                    escape_bytes(size) + "', not a byte count");
      }
      info.etag = c.child_text("ETag");
      page.objects.push_back(std::move(info));
    } else if (c.name == "CommonPrefixes") {
      page.common_prefixes.push_back(decode(c.child_text("Prefix")));
    } else if (c.name == "NextContinuationToken" && !c.text.empty()) {
      page.next_continuation_token = c.text;  // opaque: never decoded
    }
  }
  if (page.truncated && !page.next_continuation_token) {
    throw std::invalid_argument(std::string(what) +
                                ": IsTruncated is true but there is no NextContinuationToken (is this a "
                                "ListObjects V1 server? ringfeed lists with V2)");
  }
  return page;
}

std::optional<s3_error_info> parse_s3_error(std::string_view xml) noexcept {
  try {
    if (xml.find('<') == std::string_view::npos) return std::nullopt;
    const xml_node root = parse(xml, "error response");
    const xml_node* err = nullptr;
    std::string request_id;
    if (root.name == "Error") {
      err = &root;
      request_id = root.child_text("RequestId");
    } else if (root.name == "ErrorResponse") {  // STS, and S3-compatible stores that follow it
      err = root.child("Error");
      request_id = root.child_text("RequestId");
      if (err != nullptr && request_id.empty()) request_id = err->child_text("RequestId");
    }
    if (err == nullptr) return std::nullopt;
    s3_error_info info{err->child_text("Code"), err->child_text("Message"), std::move(request_id),
                       err->child_text("HostId")};
    if (info.code.empty() && info.message.empty()) return std::nullopt;
    return info;
  } catch (...) {
    return std::nullopt;
  }
}

aws_credentials parse_assume_role_with_web_identity(std::string_view xml) {
  constexpr std::string_view what = "STS AssumeRoleWithWebIdentity response";
  const xml_node root = parse(xml, what);
  const xml_node* result = nullptr;
  if (root.name == "AssumeRoleWithWebIdentityResponse") result = root.child("AssumeRoleWithWebIdentityResult");
  if (root.name == "AssumeRoleResponse") result = root.child("AssumeRoleResult");
  if (result == nullptr) {
    if (auto err = parse_s3_error(xml)) {
      throw std::invalid_argument(std::string(what) + ": STS answered " + err->code + ": " + err->message +
                                  " (request id " + err->request_id + ")");
    }
    throw std::invalid_argument(std::string(what) + ": the root element is <" + escape_bytes(root.name) +
                                ">, not <AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult>");
  }
  const xml_node* c = result->child("Credentials");
  if (c == nullptr) throw std::invalid_argument(std::string(what) + ": no <Credentials>");
  aws_credentials out{c->child_text("AccessKeyId"), c->child_text("SecretAccessKey"), c->child_text("SessionToken"),
                      std::nullopt};
  for (const auto* field : {"AccessKeyId", "SecretAccessKey", "SessionToken", "Expiration"}) {
    if (c->child_text(field).empty()) throw std::invalid_argument(std::string(what) + ": no <" + field + ">");
  }
  const std::string expiration = c->child_text("Expiration");
  out.expiration = parse_iso8601(expiration);
  if (!out.expiration) {
    throw std::invalid_argument(std::string(what) + ": <Expiration> '" + escape_bytes(expiration) +
                                "' is not an ISO 8601 time");
  }
  return out;
}

}  // namespace ringfeed::io
