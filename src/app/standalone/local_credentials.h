// Standalone mode's credentials (docs/protocol.md §P2.5, §P4.4, §P4.5): the sedna.io/credential
// annotation the local GM puts on the objects it sends, byte for byte as Sedna's GM makes it, and
// the S3 variables its local workers get for their s3:// URLs. Pure functions of the manifests'
// Secrets; their results hold Secret values, so callers never log or store them.
#pragma once

#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <utility>
#include <vector>

#include "adapters/manifest/manifest.h"

namespace sedna::app {

// The manifests' Secrets by (namespace, name).
using SecretMap = std::map<std::pair<std::string, std::string>, manifest::Secret>;

// §P2.5, the value of the GM's sedna.io/credential annotation: Go's json.Marshal of a
// map[string]string holding the Secret's annotations and then its data (a key in both gets the
// data value): compact, keys sorted bytewise, strings escaped as encoding/json escapes them
// (`<` `>` `&` as \u003c \u003e \u0026, U+2028/U+2029 as \u2028 \u2029, invalid UTF-8 as \ufffd).
std::string CredentialJson(const manifest::Secret& secret);

struct CredentialInjection {
  std::string object_json;  // the object to send downstream
  // The Secret named by spec.credentialName, as "namespace/name"; "" when the object sets none.
  std::string secret;
  bool missing = false;  // that Secret is not in the map: object_json is the object unchanged
};

// The GM's InjectSecretAnnotations (§P2.5) for an object about to be sent downstream (a Dataset,
// Model, IncrementalLearningJob or LifelongLearningJob as JSON text): when spec.credentialName is
// set and names a Secret of the object's namespace, metadata.annotations["sedna.io/credential"]
// is set to CredentialJson of it (other annotations kept); otherwise the object is returned as it
// is. The result holds the Secret's values: send it, never log or store it.
CredentialInjection InjectCredential(const std::string& object_json, const SecretMap& secrets);

// One URL a worker gets in its environment (§P4.4) and the object whose Secret applies to it, as
// the GM assigns them: the job's for outputDir, the train data and trained models, the Dataset's
// for TEST_DATASET_URL and ORIGINAL_DATASET_URL, a Model's for that Model's URL. When the owner
// sets no spec.credentialName, the fallback's applies (standalone mode: the job for the others'
// URLs, since e.g. TEST_DATASET_URL is a file the LC wrote under the job's outputDir).
struct WorkerUrl {
  std::string var;              // the env var holding it, e.g. "MODEL_URL" (for messages)
  std::string url;              // as given to the worker: standalone mode passes URLs unchanged
  std::string owner;            // e.g. "IncrementalLearningJob default/j" (for messages)
  std::string ns;               // the owner's namespace (and the fallback's)
  std::string credential_name;  // the owner's spec.credentialName; "" when it sets none
  std::string fallback_owner;   // "" when none
  std::string fallback_credential_name;  // the fallback's spec.credentialName
};

struct WorkerS3Env {
  // S3_ENDPOINT_URL, ACCESS_KEY_ID and SECRET_ACCESS_KEY, or nothing. Holds a Secret's values:
  // give it to the worker's environment only, never log or store it.
  std::map<std::string, std::string> env;
  std::string secret;                 // the Secret they come from, "namespace/name"
  std::vector<std::string> warnings;  // why an s3:// URL got no credentials (no Secret values)
};

// The S3 environment Sedna's GM gives a worker for its s3:// URLs (§P4.4, §P4.5; the GM's
// buildS3SecretEnvs). Standalone mode has no storage initializer: every URL reaches the worker
// unchanged, so every s3:// URL (scheme case-insensitive) counts, not only the GM's
// non-downloaded ones. The worker gets the variables of the first such URL, in `urls` order,
// whose owner's Secret is usable (the GM's MergeSecretEnvs without overwrite):
//   S3_ENDPOINT_URL    "http://" + s3-endpoint when s3-usehttps is "0", else "https://" + it
//   ACCESS_KEY_ID      the Secret's ACCESS_KEY_ID ("" when absent, as the GM gives it)
//   SECRET_ACCESS_KEY  the Secret's SECRET_ACCESS_KEY (likewise)
// Keys are read from the Secret's annotations and data together (data wins), the map the
// sedna.io/credential annotation holds (§P2.5), so the worker reaches the store the LC reaches.
// A Secret without s3-endpoint is unusable (the GM injects nothing for it). Warnings name the
// variables, the owner and the Secret: an s3:// URL whose owner (and fallback) sets no
// credentialName, names a Secret that is missing or unusable, or whose Secret is not the one the
// worker gets; a Secret without ACCESS_KEY_ID or SECRET_ACCESS_KEY. Host paths and http(s) URLs
// need nothing.
WorkerS3Env S3EnvForWorker(const std::vector<WorkerUrl>& urls, const SecretMap& secrets);

// The object's namespace ("default" when unset) and spec.credentialName ("" when unset).
std::pair<std::string, std::string> CredentialRef(const nlohmann::json& obj);

}  // namespace sedna::app
