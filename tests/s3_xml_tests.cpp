// S3/STS XML: ListObjectsV2 pages (pagination fields, url encoding), error
// bodies (SlowDown, NoSuchKey, STS's ErrorResponse) with their request id,
// AssumeRoleWithWebIdentity credentials, and hostile documents.
#include <catch2/catch.hpp>

#include <ringfeed/io/s3_xml.hpp>

#include <chrono>

using namespace ringfeed::io;
using namespace std::chrono;

// The shape of the S3 API reference's ListObjectsV2 example response.
static constexpr const char* list_page_1 = R"(<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Name>bucket</Name>
  <Prefix>train/</Prefix>
  <KeyCount>2</KeyCount>
  <MaxKeys>2</MaxKeys>
  <IsTruncated>true</IsTruncated>
  <Contents>
    <Key>train/cat/1.jpg</Key>
    <LastModified>2009-10-12T17:50:30.000Z</LastModified>
    <ETag>&quot;fba9dede5f27731c9771645a39863328&quot;</ETag>
    <Size>434234</Size>
    <StorageClass>STANDARD</StorageClass>
  </Contents>
  <Contents>
    <Key>train/cat/2.jpg</Key>
    <ETag>"599bab3ed2c697f1d26842727561fd94-2"</ETag>
    <Size>18446744073709551615</Size>
  </Contents>
  <NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>
</ListBucketResult>)";

TEST_CASE("ListObjectsV2: keys, sizes, ETags and the continuation token", "[s3xml]") {
  const auto page = parse_list_objects_v2(list_page_1);
  CHECK(page.truncated);
  REQUIRE(page.next_continuation_token);
  CHECK(*page.next_continuation_token == "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
  REQUIRE(page.objects.size() == 2);
  CHECK(page.objects[0].key == "train/cat/1.jpg");
  CHECK(page.objects[0].size == 434234);
  CHECK(page.objects[0].etag == "\"fba9dede5f27731c9771645a39863328\"");
  CHECK(page.objects[1].size == 18446744073709551615ull);
  CHECK(page.objects[1].etag == "\"599bab3ed2c697f1d26842727561fd94-2\"");
}

TEST_CASE("ListObjectsV2: the last page, an empty listing, common prefixes", "[s3xml]") {
  auto page = parse_list_objects_v2(
      "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>b</Name><KeyCount>1</KeyCount>"
      "<IsTruncated>false</IsTruncated><Contents><Key>k</Key><Size>0</Size><ETag>\"e\"</ETag></Contents>"
      "<ContinuationToken>prev</ContinuationToken></ListBucketResult>");
  CHECK_FALSE(page.truncated);
  CHECK_FALSE(page.next_continuation_token);
  REQUIRE(page.objects.size() == 1);
  CHECK(page.objects[0].size == 0);

  page = parse_list_objects_v2("<ListBucketResult><IsTruncated>false</IsTruncated><KeyCount>0</KeyCount>"
                               "</ListBucketResult>");
  CHECK(page.objects.empty());

  page = parse_list_objects_v2("<ListBucketResult><IsTruncated>false</IsTruncated><Delimiter>/</Delimiter>"
                               "<CommonPrefixes><Prefix>train/cat/</Prefix></CommonPrefixes>"
                               "<CommonPrefixes><Prefix>train/dog/</Prefix></CommonPrefixes></ListBucketResult>");
  CHECK(page.common_prefixes == std::vector<std::string>{"train/cat/", "train/dog/"});
}

TEST_CASE("ListObjectsV2: EncodingType url keys are decoded, the token is not", "[s3xml]") {
  const auto page = parse_list_objects_v2(
      "<ListBucketResult><EncodingType>url</EncodingType><IsTruncated>true</IsTruncated>"
      "<Contents><Key>train/a+b%2Bc%01%E2%82%AC.jpg</Key><Size>3</Size></Contents>"
      "<CommonPrefixes><Prefix>x%20y/</Prefix></CommonPrefixes>"
      "<NextContinuationToken>a%2Bb</NextContinuationToken></ListBucketResult>");
  REQUIRE(page.objects.size() == 1);
  CHECK(page.objects[0].key == "train/a b+c\x01\xE2\x82\xAC.jpg");
  CHECK(page.common_prefixes == std::vector<std::string>{"x y/"});
  CHECK(*page.next_continuation_token == "a%2Bb");
}

TEST_CASE("ListObjectsV2: bad pages are refused with the reason", "[s3xml]") {
  CHECK_THROWS_WITH(parse_list_objects_v2("<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>"),
                    Catch::Contains("no NextContinuationToken"));
  CHECK_THROWS_WITH(parse_list_objects_v2("<ListBucketResult><Contents><Key>k</Key><Size>12x</Size></Contents>"
                                          "</ListBucketResult>"),
                    Catch::Contains("<Size> of 'k' is '12x'"));
  CHECK_THROWS_WITH(parse_list_objects_v2("<ListBucketResult><Contents><Size>1</Size></Contents></ListBucketResult>"),
                    Catch::Contains("no <Key>"));
  CHECK_THROWS_WITH(parse_list_objects_v2("<ListBucketResult><Contents>"),
                    Catch::Contains("not well-formed") && Catch::Contains("line 1"));
  CHECK_THROWS_WITH(parse_list_objects_v2("<Error><Code>AccessDenied</Code></Error>"),
                    Catch::Contains("root element is <Error>"));
  CHECK_THROWS_WITH(parse_list_objects_v2("<html><body>502 Bad Gateway</body></html>"), Catch::Contains("<html>"));
  CHECK_THROWS_WITH(parse_list_objects_v2(""), Catch::Contains("not well-formed"));
}

TEST_CASE("XML with a DTD is refused (no entity expansion)", "[s3xml]") {
  const char* laughs = R"(<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>
<ListBucketResult><Contents><Key>&lol2;</Key><Size>1</Size></Contents></ListBucketResult>)";
  CHECK_THROWS_WITH(parse_list_objects_v2(laughs), Catch::Contains("DTD"));
  CHECK_FALSE(parse_s3_error(laughs));
}

TEST_CASE("S3 error bodies: SlowDown with its request id", "[s3xml]") {
  const auto e = parse_s3_error(R"(<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message>
<RequestId>4442587FB7D0A2F9</RequestId><HostId>ZXhhbXBsZQ==</HostId></Error>)");
  REQUIRE(e);
  CHECK(e->code == "SlowDown");
  CHECK(e->message == "Please reduce your request rate.");
  CHECK(e->request_id == "4442587FB7D0A2F9");
  CHECK(e->host_id == "ZXhhbXBsZQ==");

  const auto nk = parse_s3_error("<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message>"
                                 "<Key>train/x.jpg</Key><RequestId>R1</RequestId></Error>");
  REQUIRE(nk);
  CHECK(nk->code == "NoSuchKey");
  CHECK(nk->request_id == "R1");
}

TEST_CASE("STS error bodies: ErrorResponse with the request id outside Error", "[s3xml]") {
  const auto e = parse_s3_error(R"(<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <Error><Type>Sender</Type><Code>InvalidIdentityToken</Code><Message>Token expired</Message></Error>
  <RequestId>c6104cbe-af31-11e0-8154-cbc7ccf896c7</RequestId></ErrorResponse>)");
  REQUIRE(e);
  CHECK(e->code == "InvalidIdentityToken");
  CHECK(e->request_id == "c6104cbe-af31-11e0-8154-cbc7ccf896c7");
}

TEST_CASE("error bodies that are not S3 errors give nothing, never throw", "[s3xml]") {
  CHECK_FALSE(parse_s3_error(""));
  CHECK_FALSE(parse_s3_error("Service Unavailable"));
  CHECK_FALSE(parse_s3_error("<html><body><h1>503 Service Unavailable</h1></body></html>"));
  CHECK_FALSE(parse_s3_error("<Error><Code>SlowDo"));  // cut mid-body
  CHECK_FALSE(parse_s3_error("<ListBucketResult/>"));
}

TEST_CASE("STS AssumeRoleWithWebIdentity: credentials and expiry", "[s3xml][sts]") {
  const auto c = parse_assume_role_with_web_identity(R"(<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleWithWebIdentityResult>
    <SubjectFromWebIdentityToken>amzn1.account.AF6RHO7KZU5XRVQJGXK6HB56KR2A</SubjectFromWebIdentityToken>
    <Credentials>
      <SessionToken>AQoDYXdzEE0a8ANXXXXXXXXNO1ewxE5TijQyp+IEXAMPLE</SessionToken>
      <SecretAccessKey>wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY</SecretAccessKey>
      <Expiration>2014-10-24T23:00:23Z</Expiration>
      <AccessKeyId>ASgeIAIOSFODNN7EXAMPLE</AccessKeyId>
    </Credentials>
  </AssumeRoleWithWebIdentityResult>
  <ResponseMetadata><RequestId>ad4156e9-bce1-11e2-82e6-6b6efEXAMPLE</RequestId></ResponseMetadata>
</AssumeRoleWithWebIdentityResponse>)");
  CHECK(c.access_key_id == "ASgeIAIOSFODNN7EXAMPLE");
  CHECK(c.secret_access_key == "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY");
  CHECK(c.session_token == "AQoDYXdzEE0a8ANXXXXXXXXNO1ewxE5TijQyp+IEXAMPLE");
  REQUIRE(c.expiration);
  CHECK(*c.expiration == sys_days{2014y / 10 / 24} + 23h + 0min + 23s);
}

TEST_CASE("STS: an error or an incomplete answer is refused without secrets", "[s3xml][sts]") {
  CHECK_THROWS_WITH(parse_assume_role_with_web_identity(
                        "<ErrorResponse><Error><Code>AccessDenied</Code><Message>Not authorized</Message></Error>"
                        "<RequestId>rid-1</RequestId></ErrorResponse>"),
                    Catch::Contains("AccessDenied") && Catch::Contains("rid-1"));
  try {
    (void)parse_assume_role_with_web_identity(
        "<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials>"
        "<AccessKeyId>AK</AccessKeyId><SecretAccessKey>TOPSECRET</SecretAccessKey><SessionToken>TOK</SessionToken>"
        "<Expiration>tomorrow</Expiration></Credentials></AssumeRoleWithWebIdentityResult>"
        "</AssumeRoleWithWebIdentityResponse>");
    FAIL("no error");
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    CHECK(what.find("'tomorrow' is not an ISO 8601 time") != std::string::npos);
    CHECK(what.find("TOPSECRET") == std::string::npos);
    CHECK(what.find("TOK") == std::string::npos);
  }
}

TEST_CASE("parse_iso8601: the forms AWS writes", "[s3xml]") {
  const auto base = sys_days{2024y / 5 / 1} + 12h;
  CHECK(parse_iso8601("2024-05-01T12:00:00Z") == base);
  CHECK(parse_iso8601("2024-05-01T12:00:00.250Z") == base + 250ms);
  CHECK(parse_iso8601("2024-05-01T14:00:00+02:00") == base);
  CHECK_FALSE(parse_iso8601("2024-05-01T12:00:00"));
  CHECK_FALSE(parse_iso8601("2024-13-01T12:00:00Z"));
  CHECK_FALSE(parse_iso8601("soon"));
}

TEST_CASE("ListObjectsV2: a page as s3rver 3.7.1 writes it (its own namespace, no EncodingType)", "[s3xml]") {
  // Captured from the test server (tests/support/object_store.py) for
  // ?list-type=2&max-keys=2&prefix=train/&encoding-type=url: s3rver does
  // not url-encode keys and says so by leaving EncodingType out.
  const auto page = parse_list_objects_v2(
      R"(<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://doc.s3.amazonaws.com/2006-03-01/"><Name>data</Name><Prefix>train/</Prefix><NextContinuationToken>1NlFqKsAh165XN9bMqMaaerm6svUZbXU0VHAeqUPQO9xAR4AUifPTOmkvju4ZL28</NextContinuationToken><KeyCount>2</KeyCount><MaxKeys>2</MaxKeys><IsTruncated>true</IsTruncated><Contents><Key>train/cat/1.jpg</Key><LastModified>2026-11-25T19:08:54.000Z</LastModified><ETag>&quot;04adb4e2f055c978c9bb101ee1bc5cd4&quot;</ETag><Size>7</Size><StorageClass>STANDARD</StorageClass></Contents><Contents><Key>train/cat/2 b+c.jpg</Key><LastModified>2026-11-25T19:08:54.000Z</LastModified><ETag>&quot;04adb4e2f055c978c9bb101ee1bc5cd4&quot;</ETag><Size>7</Size><StorageClass>STANDARD</StorageClass></Contents></ListBucketResult>)");
  CHECK(page.truncated);
  CHECK(page.next_continuation_token == "1NlFqKsAh165XN9bMqMaaerm6svUZbXU0VHAeqUPQO9xAR4AUifPTOmkvju4ZL28");
  REQUIRE(page.objects.size() == 2);
  CHECK(page.objects[1].key == "train/cat/2 b+c.jpg");  // '+' kept: not url-encoded
  CHECK(page.objects[1].etag == "\"04adb4e2f055c978c9bb101ee1bc5cd4\"");
  // s3rver's errors carry no RequestId.
  const auto e = parse_s3_error(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>NoSuchKey</Code><Message>The specified key does not "
      "exist.</Message><Key>nokey</Key></Error>");
  REQUIRE(e);
  CHECK(e->code == "NoSuchKey");
  CHECK(e->request_id.empty());
}
