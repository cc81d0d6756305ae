// fm::renderChatImages: in a VLM chat only a user turn's <image> markers
// take images; <image> in system text, replies and the template stays text.
#include "fm/image_prompt.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

// The template of test/e2e/check_vlm_text.py.
const char *kTemplate =
    "{{ bos_token }}{% for m in messages %}<|{{ m.role }}|>\n{{ m.content }}\n"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>\n{% endif %}";
const std::string kPad = "<|image_pad|>";

// The reference: what the template gives for these messages, written out
// by hand, with each user marker as `per` pads.
std::string pads(int per) {
  std::string s;
  for (int i = 0; i < per; ++i)
    s += kPad;
  return s;
}

struct Rendered {
  std::string text;
  int64_t markers = -1;
};

Rendered render(const std::vector<fm::ChatMessage> &messages,
                const char *source = kTemplate) {
  auto tmpl = fm::ChatTemplate::compile(source, "test template");
  EXPECT_TRUE(tmpl) << tmpl.message();
  fm::ChatTemplateOptions options;
  options.bosToken = "<s>";
  Rendered r;
  auto text = fm::renderChatImages(*tmpl, source, messages, options, kPad, 3,
                                   &r.markers);
  EXPECT_TRUE(text) << text.message();
  if (text)
    r.text = *text;
  return r;
}

TEST(ImagePrompt, AReplyHoldingTheMarkerStaysText) {
  Rendered r = render({{"user", "Hello"},
                       {"assistant", "I see <image> here"},
                       {"user", "What is in <image>?"}});
  EXPECT_EQ(r.markers, 1);
  EXPECT_EQ(r.text, "<s><|user|>\nHello\n<|assistant|>\nI see <image> here\n"
                    "<|user|>\nWhat is in " + pads(3) + "?\n<|assistant|>\n");
}

TEST(ImagePrompt, ASystemTextHoldingTheMarkerStaysText) {
  Rendered r = render({{"system", "Answer <image> questions."},
                       {"user", "<image> and <image>"}});
  EXPECT_EQ(r.markers, 2);
  EXPECT_EQ(r.text, "<s><|system|>\nAnswer <image> questions.\n<|user|>\n" +
                        pads(3) + " and " + pads(3) + "\n<|assistant|>\n");
}

TEST(ImagePrompt, TheTemplatesOwnMarkerStaysText) {
  Rendered r = render({{"user", "a <image>"}},
                      "<image>{% for m in messages %}{{ m.content }}{% endfor %}");
  EXPECT_EQ(r.markers, 1);
  EXPECT_EQ(r.text, "<image>a " + pads(3));
}

TEST(ImagePrompt, ASentinelTheUserTypedIsText) {
  // U+E000 and U+E001 typed by the user and a reply: the sentinel is U+E002,
  // so they stay as they are and only the marker expands.
  Rendered r = render({{"user", "\xEE\x80\x80 <image>"},
                       {"assistant", "\xEE\x80\x81"},
                       {"user", "\xEE\x80\x80\xEE\x80\x81"}});
  EXPECT_EQ(r.markers, 1);
  EXPECT_EQ(r.text, "<s><|user|>\n\xEE\x80\x80 " + pads(3) +
                        "\n<|assistant|>\n\xEE\x80\x81\n<|user|>\n"
                        "\xEE\x80\x80\xEE\x80\x81\n<|assistant|>\n");
  EXPECT_EQ(fm::chatImageSentinel({"\xEE\x80\x80 x", "\xEE\x80\x81"}),
            "\xEE\x80\x82");
  EXPECT_EQ(fm::chatImageSentinel({"plain"}), "\xEE\x80\x80");
}

TEST(ImagePrompt, ATemplateThatDropsATurnRendersFewerMarkers) {
  // Only the last message: the earlier turn's marker is gone, and the count
  // says so (Conversation::say compares it with the images in use).
  Rendered r = render({{"user", "<image>"}, {"assistant", "ok"}, {"user", "b"}},
                      "{{ messages[-1].content }}");
  EXPECT_EQ(r.markers, 0);
  EXPECT_EQ(r.text, "b");
}

TEST(ImagePrompt, NoSentinelLeftIsAnError) {
  std::string all;
  for (uint32_t cp = 0xE000; cp <= 0xF8FF; ++cp) {
    all += static_cast<char>(0xE0 | (cp >> 12));
    all += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    all += static_cast<char>(0x80 | (cp & 0x3F));
  }
  EXPECT_EQ(fm::chatImageSentinel({all}), "");
  auto tmpl = fm::ChatTemplate::compile(kTemplate, "t");
  ASSERT_TRUE(tmpl);
  int64_t markers = 0;
  auto text = fm::renderChatImages(*tmpl, kTemplate, {{"user", all + "<image>"}},
                                   {}, kPad, 3, &markers);
  ASSERT_FALSE(text);
  EXPECT_NE(text.message().find("every private-use code point"),
            std::string::npos) << text.message();
}

// The image token's text typed by the user is refused, but only outside the
// markers: llava's image token is the text <image> itself.
TEST(ImagePrompt, ImageTextOutsideMarkersOnly) {
  EXPECT_TRUE(fm::holdsOutsideMarkers("a " + kPad + " b", kPad));
  EXPECT_TRUE(fm::holdsOutsideMarkers("<image> x" + kPad, kPad));
  EXPECT_FALSE(fm::holdsOutsideMarkers("look: <image> and <image>", kPad));
  // llava: its markers are its token's text.
  EXPECT_FALSE(fm::holdsOutsideMarkers("look: <image>", "<image>"));
  EXPECT_FALSE(fm::holdsOutsideMarkers("<image><image>", "<image>"));
  EXPECT_FALSE(fm::holdsOutsideMarkers("no image", "<image>"));
  EXPECT_FALSE(fm::holdsOutsideMarkers("anything", ""));
  // A pad split by a marker is no pad.
  EXPECT_FALSE(fm::holdsOutsideMarkers("<|image<image>_pad|>", kPad));
}

// A reply that spells the image token's text keeps none of it in the
// history, even where removing one joins the next.
TEST(ImagePrompt, ReplyHistoryHoldsNoImageText) {
  EXPECT_EQ(fm::withoutImageText("see " + kPad + " and " + kPad + kPad, kPad),
            "see  and ");
  EXPECT_EQ(fm::withoutImageText("<|image" + kPad + "_pad|>!", kPad), "!");
  EXPECT_EQ(fm::withoutImageText("x<image>y", "<image>"), "xy");
  EXPECT_EQ(fm::withoutImageText("plain <image> text", kPad), "plain <image> text");
  EXPECT_EQ(fm::withoutImageText("kept", ""), "kept");
}

} // namespace
