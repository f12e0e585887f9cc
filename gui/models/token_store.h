// The Hugging Face access token for gated models (FLUX.1-dev), kept in the desktop's secret store
// (GNOME Keyring or KWallet, through qtkeychain), never in the settings. Where no secret store answers
// (no D-Bus session, no keyring), the token is kept for this session only, and said so.
#pragma once
#include <QObject>
#include <QString>

namespace studio::gui {

class TokenStore : public QObject {
  Q_OBJECT
 public:
  using QObject::QObject;
  // Asks the store for the saved token; answered by loaded().
  void load();
  // Saves `token` (empty: deletes the saved one); answered by saved(). The token is this session's either way.
  void save(const QString& token);
  QString token() const { return token_; }
  bool store_reachable() const { return reachable_; }

 Q_SIGNALS:
  void loaded(const QString& token, const QString& message);
  void saved(bool stored, const QString& message);

 private:
  QString unreachable(const QString& why) const;
  QString token_;
  bool reachable_ = true;
};

}  // namespace studio::gui
