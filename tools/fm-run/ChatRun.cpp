// fm-run --chat: one user turn per stdin line (or the turns of --chat-file,
// separated by lines holding only "---"), each reply streamed to stdout; the
// conversation is rendered with the checkpoint's chat template every turn
// and only what the KV cache lacks is prefilled (fm::Conversation).
#include "TextRun.h"

#include "fm/conversation.h"
#include "fm/image_prompt.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace fmrun {
namespace {

/// The turns of a --chat-file: separated by lines that are exactly "---";
/// a turn's surrounding newlines are dropped, empty turns skipped.
bool readTurns(const std::string &path, std::vector<std::string> *turns) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::string line, turn;
  auto flush = [&] {
    size_t b = turn.find_first_not_of("\r\n"), e = turn.find_last_not_of("\r\n");
    if (b != std::string::npos)
      turns->push_back(turn.substr(b, e - b + 1));
    turn.clear();
  };
  while (std::getline(in, line)) {
    if (line == "---" || line == "---\r") {
      flush();
      continue;
    }
    turn += line;
    turn += '\n';
  }
  flush();
  return !in.bad();
}

/// "> " before every line of `text`, as a transcript shows a user turn.
std::string quotedTurn(const std::string &text) {
  std::string out = "> ";
  for (char c : text) {
    out += c;
    if (c == '\n')
      out += "> ";
  }
  return out + "\n";
}

} // namespace

int runChat(const TextArgs &args, Loaded &loaded, fm::Communicator *comm) {
  const bool leader = !comm || comm->rank() == 0;
  auto abortAll = [&](const std::string &message) {
    int rc = fail(message);
    if (comm && comm->size() > 1)
      comm->abort(rc);
    return rc;
  };
  fm::ConversationOptions options;
  options.system = args.system;
  auto conversation = fm::Conversation::start(*loaded.session, options);
  if (!conversation)
    return abortAll(conversation.message());

  std::vector<std::string> scripted;
  const bool fromFile = !args.chatFile.empty();
  if (fromFile && !readTurns(args.chatFile, &scripted))
    return abortAll("--chat-file " + args.chatFile + ": cannot read it");
  // Images: one per <image> marker of the turns, in order, each encoded
  // once here (fm::Conversation keeps their tokens).
  const fm::ImageEncoderInfo *ie = loaded.model->imageEncoder();
  const bool vlm = ie && ie->imageTokenIndex >= 0;
  const int64_t given = static_cast<int64_t>(args.images.size());
  auto markerCount = [](int64_t n) {
    return std::to_string(n) + " " + std::string(fm::kImageMarker) +
           (n == 1 ? " marker" : " markers");
  };
  if (fromFile && vlm) {
    int64_t markers = 0;
    for (const std::string &turn : scripted)
      markers += fm::countImageMarkers(turn);
    if (markers != given)
      return abortAll("--chat-file " + args.chatFile + ": its turns hold " +
                      markerCount(markers) + " but " + std::to_string(given) +
                      " --image/--image-tensor " + (given == 1 ? "was" : "were") +
                      " given: each marker takes the next image, in order");
  }
  if (given > 0 && !vlm)
    return abortAll(loaded.model->name() + " takes no images in a chat (it is "
                                           "no VLM): no --image with --chat");
  for (const auto &image : args.images) {
    auto input = loadImage(*ie, image.first, image.second);
    if (!input)
      return abortAll(input.message());
    auto added = conversation->addImage(input->data(), static_cast<int64_t>(input->size()));
    if (!added)
      return abortAll(imageFlag(image) + ": " + added.message());
  }
  const bool terminal = !fromFile && isatty(STDIN_FILENO);
  size_t next = 0;
  // The next user turn, or false at the end of the input.
  auto nextTurn = [&](std::string *turn) {
    if (fromFile) {
      if (next == scripted.size())
        return false;
      *turn = scripted[next++];
      return true;
    }
    for (;;) {
      if (terminal)
        writeOut("> ");
      if (!std::getline(std::cin, *turn))
        return false;
      if (!turn->empty() && turn->back() == '\r')
        turn->pop_back();
      if (!turn->empty())
        return true;
    }
  };

  fm::Sampler sampler = makeSampler(args);
  int exitStatus = 0; // kIncomplete when a guided reply was cut
  std::string user;
  for (int turnNo = 1; nextTurn(&user); ++turnNo) {
    if (leader && !terminal)
      writeOut(quotedTurn(user));
    // Each reply is constrained from its first token (a fresh constraint).
    fm::GenerateOptions generate = generateOptions(args);
    TextGuide guide(loaded, &generate, leader);
    auto streamed = [&](std::string_view piece) {
      guide.write(piece);
      return true;
    };
    auto turn = conversation->say(user, sampler, generate, streamed);
    if (!turn)
      return abortAll(turn.message());
    if (leader && !guide.endsLine())
      writeOut("\n");
    auto guided = guide.finish(turn->reply);
    if (!guided)
      return abortAll(guided.message());
    exitStatus = std::max(exitStatus, *guided);
    if (leader && args.stats) {
      const fm::Generation &g = turn->reply;
      const double decodeRate =
          g.decodeMs > 0.0 ? g.decodeTokens * 1000.0 / g.decodeMs : 0.0;
      std::fprintf(stderr,
                   "{\"turn\": %d, \"context_tokens\": %lld, "
                   "\"reused_tokens\": %lld, \"prefilled_tokens\": %lld, "
                   "\"generated_tokens\": %lld, \"prefill_ms\": %.3f, "
                   "\"decode_tokens_per_s\": %.3f, \"stop\": \"%s\", "
                   "\"generated_ids\": %s, \"context_ids\": %s, "
                   "\"prefilled_images\": %lld, \"images_encoded\": %lld, "
                   "\"gemm_repack_ms\": %.3f}\n",
                   turnNo, static_cast<long long>(turn->contextTokens),
                   static_cast<long long>(turn->reusedTokens),
                   static_cast<long long>(turn->prefilledTokens),
                   static_cast<long long>(g.tokens.size()), g.prefillMs,
                   decodeRate, fm::stopReasonName(g.stop),
                   idsJson(g.tokens).c_str(), idsJson(turn->context).c_str(),
                   static_cast<long long>(turn->prefilledImages),
                   static_cast<long long>(conversation->images()), g.firstRunMs);
    }
  }
  if (conversation->imagesTaken() < given)
    return abortAll("the chat's turns held " +
                    markerCount(conversation->imagesTaken()) + " but " +
                    std::to_string(given) + " --image/--image-tensor " +
                    (given == 1 ? "was" : "were") +
                    " given: each marker takes the next image, in order");
  if (leader && args.stats)
    std::fprintf(stderr, "{\"load_ms\": %.3f, \"context_tokens\": %lld, "
                         "\"peak_rss_mb\": %.1f, \"threads\": %d, "
                         "\"device\": \"%s\"}\n",
                 loaded.loadMs,
                 static_cast<long long>(loaded.session->position()),
                 peakRssMb(), loaded.session->threads(),
                 loaded.model->device().c_str());
  return exitStatus;
}

} // namespace fmrun
