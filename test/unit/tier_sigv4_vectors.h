/* AWS's published Signature Version 4 test suite ("aws-sig-v4-test-suite", from the AWS
 * General Reference's "Signature Version 4 Test Suite"): the cases whose request, canonical
 * request, string to sign and Authorization header agree with one another, copied as
 * published (credentials AKIDEXAMPLE / wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY, region
 * us-east-1, service "service", 20150830T123600Z). Then the S3 examples of the S3 API
 * reference's "Signature Calculations for the Authorization Header" (AKIAIOSFODNN7EXAMPLE /
 * wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY, region us-east-1, service s3,
 * 20130524T000000Z): GET Object with a Range, PUT Object, GET Bucket Lifecycle and GET
 * Bucket (list objects). Used by test_tier_sigv4.c. */
#ifndef TIER_SIGV4_VECTORS_H
#define TIER_SIGV4_VECTORS_H

#include "sigv4.h"

#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define SUITE_DATE   "20150830T123600Z"
#define SUITE_SCOPE  "20150830/us-east-1/service/aws4_request"
#define SUITE_HOST                                                                                                     \
	{                                                                                                              \
		"Host", "example.amazonaws.com"                                                                        \
	}
#define SUITE_DATE_H                                                                                                   \
	{                                                                                                              \
		"X-Amz-Date", SUITE_DATE                                                                               \
	}
#define UNRES "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

struct sigv4_vector {
	const char *name;
	int s3; /* 0: the suite's key and date; 1: the S3 examples' */
	const char *method, *path;
	struct sigv4_param params[4];
	size_t n_params;
	struct sigv4_header headers[8];
	size_t n_headers;
	const char *body;
	const char *creq, *sts, *authz;
};

static const struct sigv4_vector sigv4_vectors[] = {
    {"get-vanilla",
     0,
     "GET",
     "/",
     {{0}},
     0,
     {SUITE_HOST, SUITE_DATE_H},
     2,
     "",
     "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n" EMPTY_SHA256,
     "AWS4-HMAC-SHA256\n" SUITE_DATE "\n" SUITE_SCOPE
     "\nbb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63",
     "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/" SUITE_SCOPE ", SignedHeaders=host;x-amz-date, "
     "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"},
    {"get-vanilla-empty-query-key",
     0,
     "GET",
     "/",
     {{"Param1", "value1"}},
     1,
     {SUITE_HOST, SUITE_DATE_H},
     2,
     "",
     "GET\n/\nParam1=value1\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n" EMPTY_SHA256,
     "AWS4-HMAC-SHA256\n" SUITE_DATE "\n" SUITE_SCOPE
     "\n1e24db194ed7d0eec2de28d7369675a243488e08526e8c1c73571282f7c517ab",
     "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/" SUITE_SCOPE ", SignedHeaders=host;x-amz-date, "
     "Signature=a67d582fa61cc504c4bae71f336f98b97f1ea3c7a6bfe1b6e45aec72011b9aeb"},
    {"get-vanilla-query-order-key",
     0,
     "GET",
     "/",
     {{"Param1", "value2"}, {"Param1", "Value1"}},
     2,
     {SUITE_HOST, SUITE_DATE_H},
     2,
     "",
     "GET\n/\nParam1=Value1&Param1=value2\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-"
     "date\n" EMPTY_SHA256,
     "AWS4-HMAC-SHA256\n" SUITE_DATE "\n" SUITE_SCOPE
     "\n704b4cef673542d84cdff252633f065e8daeba5f168b77116f8b1bcaf3d38f89",
     "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/" SUITE_SCOPE ", SignedHeaders=host;x-amz-date, "
     "Signature=eedbc4e291e521cf13422ffca22be7d2eb8146eecf653089df300a15b2382bd1"},
    {"get-vanilla-query-order-key-case",
     0,
     "GET",
     "/",
     {{"Param2", "value2"}, {"Param1", "value1"}},
     2,
     {SUITE_HOST, SUITE_DATE_H},
     2,
     "",
     "GET\n/\nParam1=value1&Param2=value2\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-"
     "date\n" EMPTY_SHA256,
     "AWS4-HMAC-SHA256\n" SUITE_DATE "\n" SUITE_SCOPE
     "\n816cd5b414d056048ba4f7c5386d6e0533120fb1fcfa93762cf0fc39e2cf19e0",
     "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/" SUITE_SCOPE ", SignedHeaders=host;x-amz-date, "
     "Signature=b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"},
    {"get-vanilla-query-order-value",
     0,
     "GET",
     "/",
     {{"Param1", "value2"}, {"Param1", "value1"}},
     2,
     {SUITE_HOST, SUITE_DATE_H},
     2,
     "",
     "GET\n/\nParam1=value1&Param1=value2\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-"
     "date\n" EMPTY_SHA256,
     "AWS4-HMAC-SHA256\n" SUITE_DATE "\n" SUITE_SCOPE
     "\nc968629d70850097a2d8781c9bf7edcb988b04cac14cca9be4acc3595f884606",
     "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/" SUITE_SCOPE ", SignedHeaders=host;x-amz-date, "
     "Signature=5772eed61e12b33fae39ee5e7012498b51d56abc0abb7c60486157bd471c4694"},
    {"get-vanilla-query-unreserved",
     0,
     "GET",
     "/",
     {{UNRES, UNRES}},
     1,
     {SUITE_HOST, SUITE_DATE_H},
     2,
     "",
     "GET\n/\n" UNRES "=" UNRES
     "\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n" EMPTY_SHA256,
     "AWS4-HMAC-SHA256\n" SUITE_DATE "\n" SUITE_SCOPE
     "\nc30d4703d9f799439be92736156d47ccfb2d879ddf56f5befa6d1d6aab979177",
     "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/" SUITE_SCOPE ", SignedHeaders=host;x-amz-date, "
     "Signature=9c3e54bfcdf0b19771a7f523ee5669cdf59bc7cc0884027167c21bb143a40197"},
    {"get-vanilla-utf8-query",
     0,
     "GET",
     "/",
     {{"\xe1\x88\xb4", "bar"}},
     1,
     {SUITE_HOST, SUITE_DATE_H},
     2,
     "",
     "GET\n/\n%E1%88%B4=bar\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n" EMPTY_SHA256,
     "AWS4-HMAC-SHA256\n" SUITE_DATE "\n" SUITE_SCOPE
     "\neb30c5bed55734080471a834cc727ae56beb50e5f39d1bff6d0d38cb192a7073",
     "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/" SUITE_SCOPE ", SignedHeaders=host;x-amz-date, "
     "Signature=2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04"},
    {"get-unreserved",
     0,
     "GET",
     "/" UNRES,
     {{0}},
     0,
     {SUITE_HOST, SUITE_DATE_H},
     2,
     "",
     "GET\n/" UNRES "\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n" EMPTY_SHA256,
     "AWS4-HMAC-SHA256\n" SUITE_DATE "\n" SUITE_SCOPE
     "\n6a968768eefaa713e2a6b16b589a8ea192661f098f37349f4e2c0082757446f9",
     "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/" SUITE_SCOPE ", SignedHeaders=host;x-amz-date, "
     "Signature=07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f"},
    {"get-utf8",
     0,
     "GET",
     "/\xe1\x88\xb4",
     {{0}},
     0,
     {SUITE_HOST, SUITE_DATE_H},
     2,
     "",
     "GET\n/%E1%88%B4\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n" EMPTY_SHA256,
     "AWS4-HMAC-SHA256\n" SUITE_DATE "\n" SUITE_SCOPE
     "\n2a0a97d02205e45ce2e994789806b19270cfbbb0921b278ccf58f5249ac42102",
     "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/" SUITE_SCOPE ", SignedHeaders=host;x-amz-date, "
     "Signature=8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85"},
    {"get-header-key-duplicate",
     0,
     "GET",
     "/",
     {{0}},
     0,
     {SUITE_HOST, {"My-Header1", "value2"}, {"My-Header1", "value2"}, {"My-Header1", "value1"}, SUITE_DATE_H},
     5,
     "",
     "GET\n/\n\nhost:example.amazonaws.com\nmy-header1:value2,value2,value1\nx-amz-date:20150830T123600Z\n\nhost;my-"
     "header1;x-amz-date\n" EMPTY_SHA256,
     "AWS4-HMAC-SHA256\n" SUITE_DATE "\n" SUITE_SCOPE
     "\ndc7f04a3abfde8d472b0ab1a418b741b7c67174dad1551b4117b15527fbe966c",
     "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/" SUITE_SCOPE ", SignedHeaders=host;my-header1;x-amz-date, "
     "Signature=c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea"},
    {"get-header-value-order",
     0,
     "GET",
     "/",
     {{0}},
     0,
     {SUITE_HOST,
      {"My-Header1", "value4"},
      {"My-Header1", "value1"},
      {"My-Header1", "value3"},
      {"My-Header1", "value2"},
      SUITE_DATE_H},
     6,
     "",
     "GET\n/"
     "\n\nhost:example.amazonaws.com\nmy-header1:value4,value1,value3,value2\nx-amz-date:20150830T123600Z\n\nhost;"
     "my-header1;x-amz-date\n" EMPTY_SHA256,
     "AWS4-HMAC-SHA256\n" SUITE_DATE "\n" SUITE_SCOPE
     "\n31ce73cd3f3d9f66977ad3dd957dc47af14df92fcd8509f59b349e9137c58b86",
     "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/" SUITE_SCOPE ", SignedHeaders=host;my-header1;x-amz-date, "
     "Signature=08c7e5a9acfcfeb3ab6b2185e75ce8b1deb5e634ec47601a50643f830c755c01"},
    {"get-header-value-trim",
     0,
     "GET",
     "/",
     {{0}},
     0,
     {SUITE_HOST, {"My-Header1", " value1"}, {"My-Header2", " \"a   b   c\""}, SUITE_DATE_H},
     4,
     "",
     "GET\n/\n\nhost:example.amazonaws.com\nmy-header1:value1\nmy-header2:\"a b "
     "c\"\nx-amz-date:20150830T123600Z\n\nhost;"
     "my-header1;my-header2;x-amz-date\n" EMPTY_SHA256,
     "AWS4-HMAC-SHA256\n" SUITE_DATE "\n" SUITE_SCOPE
     "\na726db9b0df21c14f559d0a978e563112acb1b9e05476f0a6a1c7d68f28605c7",
     "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/" SUITE_SCOPE ", SignedHeaders=host;my-header1;my-header2;x-amz-date, "
     "Signature=acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736"},
    {"post-header-key-sort",
     0,
     "POST",
     "/",
     {{0}},
     0,
     {SUITE_HOST, {"My-Header1", "value1"}, SUITE_DATE_H},
     3,
     "",
     "POST\n/\n\nhost:example.amazonaws.com\nmy-header1:value1\nx-amz-date:20150830T123600Z\n\nhost;my-header1;x-amz-"
     "date\n" EMPTY_SHA256,
     "AWS4-HMAC-SHA256\n" SUITE_DATE "\n" SUITE_SCOPE
     "\n9368318c2967cf6de74404b30c65a91e8f6253e0a8659d6d5319f1a812f87d65",
     "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/" SUITE_SCOPE ", SignedHeaders=host;my-header1;x-amz-date, "
     "Signature=c5410059b04c1ee005303aed430f6e6645f61f4dc9e1461ec8f8916fdf18852c"},
    {"post-header-value-case",
     0,
     "POST",
     "/",
     {{0}},
     0,
     {SUITE_HOST, {"My-Header1", "VALUE1"}, SUITE_DATE_H},
     3,
     "",
     "POST\n/\n\nhost:example.amazonaws.com\nmy-header1:VALUE1\nx-amz-date:20150830T123600Z\n\nhost;my-header1;x-amz-"
     "date\n" EMPTY_SHA256,
     "AWS4-HMAC-SHA256\n" SUITE_DATE "\n" SUITE_SCOPE
     "\nd51ced243e649e3de6ef63afbbdcbca03131a21a7103a1583706a64618606a93",
     "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/" SUITE_SCOPE ", SignedHeaders=host;my-header1;x-amz-date, "
     "Signature=cdbc9802e29d2942e5e10b5bccfdd67c5f22c7c4e8ae67b53629efa58b974b7d"},
    {"post-vanilla-query",
     0,
     "POST",
     "/",
     {{"Param1", "value1"}},
     1,
     {SUITE_HOST, SUITE_DATE_H},
     2,
     "",
     "POST\n/"
     "\nParam1=value1\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n" EMPTY_SHA256,
     "AWS4-HMAC-SHA256\n" SUITE_DATE "\n" SUITE_SCOPE
     "\n9d659678c1756bb3113e2ce898845a0a79dbbc57b740555917687f1b3340fbbd",
     "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/" SUITE_SCOPE ", SignedHeaders=host;x-amz-date, "
     "Signature=28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11"},
    /* S3 examples. */
    {"s3-get-object-range",
     1,
     "GET",
     "/test.txt",
     {{0}},
     0,
     {{"Host", "examplebucket.s3.amazonaws.com"},
      {"Range", "bytes=0-9"},
      {"x-amz-content-sha256", EMPTY_SHA256},
      {"x-amz-date", "20130524T000000Z"}},
     4,
     "",
     "GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\nx-amz-content-sha256:" EMPTY_SHA256
     "\nx-amz-date:20130524T000000Z\n\nhost;range;x-amz-content-sha256;x-amz-date\n" EMPTY_SHA256,
     "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
     "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972",
     "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
     "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
     "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"},
    {"s3-put-object",
     1,
     "PUT",
     "/test$file.text",
     {{0}},
     0,
     {{"Host", "examplebucket.s3.amazonaws.com"},
      {"Date", "Fri, 24 May 2013 00:00:00 GMT"},
      {"x-amz-date", "20130524T000000Z"},
      {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
      {"x-amz-content-sha256", "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"}},
     5,
     "Welcome to Amazon S3.",
     "PUT\n/test%24file.text\n\ndate:Fri, 24 May 2013 00:00:00 GMT\nhost:examplebucket.s3.amazonaws.com\n"
     "x-amz-content-sha256:44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072\nx-amz-date:"
     "20130524T000000Z\nx-amz-storage-class:REDUCED_REDUNDANCY\n\ndate;host;x-amz-content-sha256;x-amz-date;x-amz-"
     "storage-class\n44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072",
     "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
     "9e0e90d9c76de8fa5b200d8c849cd5b8dc7a3be3951ddb7f6a76b4158342019d",
     "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
     "SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class, "
     "Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"},
    {"s3-get-bucket-lifecycle",
     1,
     "GET",
     "/",
     {{"lifecycle", ""}},
     1,
     {{"Host", "examplebucket.s3.amazonaws.com"},
      {"x-amz-content-sha256", EMPTY_SHA256},
      {"x-amz-date", "20130524T000000Z"}},
     3,
     "",
     "GET\n/\nlifecycle=\nhost:examplebucket.s3.amazonaws.com\nx-amz-content-sha256:" EMPTY_SHA256
     "\nx-amz-date:20130524T000000Z\n\nhost;x-amz-content-sha256;x-amz-date\n" EMPTY_SHA256,
     "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
     "9766c798316ff2757b517bc739a67f6213b4ab36dd5da2f94eaebf79c77395ca",
     "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
     "SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
     "Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"},
    {"s3-get-bucket-list",
     1,
     "GET",
     "/",
     {{"max-keys", "2"}, {"prefix", "J"}},
     2,
     {{"Host", "examplebucket.s3.amazonaws.com"},
      {"x-amz-content-sha256", EMPTY_SHA256},
      {"x-amz-date", "20130524T000000Z"}},
     3,
     "",
     "GET\n/\nmax-keys=2&prefix=J\nhost:examplebucket.s3.amazonaws.com\nx-amz-content-sha256:" EMPTY_SHA256
     "\nx-amz-date:20130524T000000Z\n\nhost;x-amz-content-sha256;x-amz-date\n" EMPTY_SHA256,
     "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
     "df57d21db20da04d7fa30298dd4488ba3a2b47ca3a489c74750e0f1e7df1b9b7",
     "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
     "SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
     "Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"},
};

#endif
