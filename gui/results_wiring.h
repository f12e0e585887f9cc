// The results views wired into the window (kept out of main_window.cpp): History's Play and Export load the
// run into the Player; Compare takes the window's whole width; an export is confirmed in the status bar.
#pragma once

namespace studio::gui {

class MainWindow;
void connect_results(MainWindow* w);

}  // namespace studio::gui
